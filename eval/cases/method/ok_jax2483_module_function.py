"""method look-alike: the maintainers' suggestion in jax-ml/jax#2483, a module-level custom_jvp and a thin method.

Report: jax-ml/jax#2483 https://github.com/jax-ml/jax/issues/2483 ("Why not write them as
functions, and then put wrapper methods on your class").
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_jax2483_module_function", "family": "method", "expect": "ok",
    "source": "jax-ml/jax#2483", "url": "https://github.com/jax-ml/jax/issues/2483",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def _energy(scale, x):
    return scale * jnp.sum(x ** 2)


@_energy.defjvp
def _energy_jvp(scale, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return scale * jnp.sum(x ** 2), scale * jnp.sum(2 * x * x_dot)


class Quadratic:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, x):
        return _energy(self.scale, x)


MODEL = Quadratic(1.5)


def eval_fn(x):
    return MODEL.energy(x)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32),)


def eval_reference(x):
    return 1.5 * np.sum(np.asarray(x, np.float64) ** 2)
