"""structure look-alike: a one-argument jax.custom_gradient whose pullback returns a bare cotangent, not a 1-tuple.

Report: jax-ml/jax#5523 https://github.com/jax-ml/jax/pull/5523 (custom_gradient used to require the
pullback to return a tuple of cotangents even for one input; the PR lets a single-input function's
pullback return the cotangent itself, unlike a custom_vjp bwd). Here a cube returns its
cotangent without a tuple.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h6_pr5523_custom_gradient_bare_cotangent", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#5523", "url": "https://github.com/jax-ml/jax/pull/5523",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@jax.custom_gradient  # eval: span
def cube_soft(x):  # eval: span
    y = x ** 3
    return y, lambda g: 3.0 * x ** 2 * g  # eval: span


def eval_fn(x):
    return jnp.sum(cube_soft(x))


def eval_inputs():
    return (np.array([0.5, -1.2, 2.0], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.asarray(x, np.float64) ** 3))
