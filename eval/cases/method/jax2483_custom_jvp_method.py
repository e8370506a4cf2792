"""method hazard: a custom_jvp-decorated method with `self` in nondiff_argnums, called as `obj.f(x)`.

Report: jax-ml/jax#2483 https://github.com/jax-ml/jax/issues/2483 ("custom_jvp breaks
descriptors"): custom_jvp objects do not implement `__get__`, so `c.f(x)` does not bind `self`
and raises "missing a required argument: 'x'" on every call. Still open.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/jax2483_custom_jvp_method", "family": "method", "expect": "hazard",
    "source": "jax-ml/jax#2483", "url": "https://github.com/jax-ml/jax/issues/2483",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


class Quadratic:
    def __init__(self, scale):
        self.scale = scale

    @partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
    def energy(self, x):  # eval: span
        return self.scale * jnp.sum(x ** 2)

    @energy.defjvp
    def energy_jvp(self, primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return self.scale * jnp.sum(x ** 2), self.scale * jnp.sum(2 * x * x_dot)


MODEL = Quadratic(1.5)


def eval_fn(x):
    return MODEL.energy(x)  # eval: span


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32),)


def eval_reference(x):
    return 1.5 * np.sum(np.asarray(x, np.float64) ** 2)
