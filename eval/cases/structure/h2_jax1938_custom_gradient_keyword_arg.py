"""structure hazard: a jax.custom_gradient function with a defaulted parameter, called by keyword.

Report: jax-ml/jax#1938 https://github.com/jax-ml/jax/issues/1938 ("Keyword arguments not working
with @jax.custom_gradient"; closed when the custom derivative API was rewritten). In JAX 0.10.2
custom_gradient is built on custom_vjp and still cannot bind the keyword call: every call raises
(called positionally, grad would then want a third cotangent, for `scale`, from the pullback).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h2_jax1938_custom_gradient_keyword_arg", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#1938", "url": "https://github.com/jax-ml/jax/issues/1938",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0, 1), "heldout": True,
}


@jax.custom_gradient  # eval: span
def scaled_sum(x, y, scale=1.0):  # eval: span
    def pullback(g):
        return scale * g, scale * g

    return scale * (x + y), pullback


def eval_fn(x, y):
    return jnp.square(scaled_sum(x, y, scale=2.0))  # eval: span


def eval_inputs():
    return (np.array([1.0, -0.5], np.float32), np.array([0.25, 2.0], np.float32))


def eval_reference(x, y):
    return np.square(2.0 * (np.asarray(x, np.float64) + np.asarray(y, np.float64)))
