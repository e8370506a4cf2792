"""composition hazard: custom_vmap wrapped around a custom_vjp function.

Report: jax-ml/jax#14150 https://github.com/jax-ml/jax/issues/14150 ("VJP error when custom_vjp
and custom_vmap are used together"): add = custom_vmap(add) over a custom_vjp add; vjp raised
(custom vmap does not support reverse-mode autodiff).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

EVAL = {
    "id": "composition/jax14150_custom_vmap_around_vjp", "family": "composition", "expect": "hazard",
    "source": "jax-ml/jax#14150", "url": "https://github.com/jax-ml/jax/issues/14150",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def add(a, b):
    return a + b


add.defvjp(lambda a, b: (add(a, b), None), lambda _, g: (g, g))

add = custom_vmap(add)  # eval: span


@add.def_vmap
def add_vmap(axis_size, in_batched, a, b):
    return add(a, b), any(in_batched)


def eval_fn(a, b):
    return jnp.sum(add(a, b) * a)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32))


def eval_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.sum((a + b) * a)
