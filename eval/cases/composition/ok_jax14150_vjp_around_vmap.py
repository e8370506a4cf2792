"""composition look-alike: the custom_vjp outside, calling a custom_vmap function inside.

Report: jax-ml/jax#14150 https://github.com/jax-ml/jax/issues/14150 (custom vmap has no
reverse-mode rule; with the custom_vjp outermost, grad uses its rules and never differentiates
the custom_vmap call).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

EVAL = {
    "id": "composition/ok_jax14150_vjp_around_vmap", "family": "composition", "expect": "ok",
    "source": "jax-ml/jax#14150", "url": "https://github.com/jax-ml/jax/issues/14150",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@custom_vmap
def raw_add(a, b):
    return a + b


@raw_add.def_vmap
def raw_add_vmap(axis_size, in_batched, a, b):
    return raw_add(a, b), any(in_batched)


@jax.custom_vjp
def add(a, b):
    return raw_add(a, b)


add.defvjp(lambda a, b: (raw_add(a, b), None), lambda _, g: (g, g))


def eval_fn(a, b):
    return jnp.sum(add(a, b) * a)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32))


def eval_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.sum((a + b) * a)
