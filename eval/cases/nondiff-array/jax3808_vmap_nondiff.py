"""nondiff-array hazard: vmapping over the argument that sits in custom_vjp nondiff_argnums.

Report: jax-ml/jax#3808 https://github.com/jax-ml/jax/issues/3808 ("custom_vjp can't handle
vmapping over a nondiff_argnums arg"). Closed by PR #4008, which turned the crash into an explicit
UnexpectedTracerError: batching a nondiff argument is still not allowed in JAX 0.10.2.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jax3808_vmap_nondiff", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#3808", "url": "https://github.com/jax-ml/jax/issues/3808",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (1,), "vmap_in_axes": (0, 0),
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def damp(rate, x):  # eval: span
    return jnp.exp(-rate * x)


def damp_fwd(rate, x):
    y = jnp.exp(-rate * x)
    return y, y


def damp_bwd(rate, y, g):
    return (-rate * y * g,)


damp.defvjp(damp_fwd, damp_bwd)


def eval_fn(rate, x):
    return damp(rate, x)


def eval_inputs():
    return (np.float32(0.7), np.array([0.5, 1.0, 2.0], np.float32))


def eval_reference(rate, x):
    return np.exp(-np.float64(rate) * np.asarray(x, np.float64))
