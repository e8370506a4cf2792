"""nondiff-array look-alike: a custom_vjp nondiff_argnums slot holds a Python tuple of ints (a static shape).

Report: jax-ml/jax#39004 https://github.com/jax-ml/jax/pull/39004 (the container check in that PR is
about traced leaves; a hashable tuple of Python ints is what nondiff_argnums is for). Here a reshape-
and-pool op takes its pooling window as a tuple in a nondiff slot, under jit.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_h6_pr39004_nondiff_static_tuple_of_ints", "family": "nondiff-array",
    "expect": "ok", "source": "jax-ml/jax#39004", "url": "https://github.com/jax-ml/jax/pull/39004",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def mean_pool(x, window):  # eval: span
    rows, cols = window
    return x.reshape(x.shape[0] // rows, rows, x.shape[1] // cols, cols).mean(axis=(1, 3))


def _mean_pool_fwd(x, window):
    return mean_pool(x, window), None


def _mean_pool_bwd(window, _, g):  # eval: span
    rows, cols = window
    up = jnp.repeat(jnp.repeat(g, rows, axis=0), cols, axis=1)
    return (up / (rows * cols),)


mean_pool.defvjp(_mean_pool_fwd, _mean_pool_bwd)


@jax.jit
def eval_fn(x):
    return jnp.sum(mean_pool(x, (2, 2)) ** 2)  # eval: span


def eval_inputs():
    return (np.arange(16, dtype=np.float32).reshape(4, 4) / 10.0,)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    pooled = x.reshape(2, 2, 2, 2).mean(axis=(1, 3))
    return np.asarray(np.sum(pooled ** 2))
