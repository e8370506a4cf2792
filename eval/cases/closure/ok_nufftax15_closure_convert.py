"""closure look-alike: the nufftax fix, the kernel closure-converted and its constants passed explicitly.

Report: GragasLab/nufftax#13 https://github.com/GragasLab/nufftax/issues/13, fixed by
https://github.com/GragasLab/nufftax/pull/15 (jax.closure_convert of the user kernel).
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_nufftax15_closure_convert", "family": "closure", "expect": "ok",
    "source": "GragasLab/nufftax#15", "url": "https://github.com/GragasLab/nufftax/pull/15",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}
GRID = np.linspace(-1.0, 1.0, 5).astype(np.float32)
POINTS = np.array([-0.3, 0.1, 0.6], np.float32)
WEIGHTS = np.array([1.0, -0.5, 2.0], np.float32)


def _spread(points, weights, kernel, consts):
    return jnp.sum(weights[:, None] * kernel(GRID[None, :] - points[:, None], *consts), axis=0)


@partial(jax.custom_vjp, nondiff_argnums=(2,))  # eval: span
def spread(points, weights, kernel, *consts):  # eval: span
    return _spread(points, weights, kernel, consts)


def spread_fwd(points, weights, kernel, *consts):
    return _spread(points, weights, kernel, consts), (points, weights, consts)


def spread_bwd(kernel, res, g):
    points, weights, consts = res
    _, vjp = jax.vjp(lambda p, w, *c: _spread(p, w, kernel, c), points, weights, *consts)
    return vjp(g)


spread.defvjp(spread_fwd, spread_bwd)


@jax.jit
def loss(sigma):
    kernel = lambda d: jnp.exp(-(d / sigma) ** 2)
    converted, consts = jax.closure_convert(kernel, GRID)
    return spread(POINTS, WEIGHTS, converted, *consts)


def eval_fn(sigma):
    return loss(sigma)


def eval_inputs():
    return (np.float32(0.5),)


def eval_reference(sigma):
    d = GRID[None, :].astype(np.float64) - POINTS[:, None]
    return np.sum(WEIGHTS[:, None] * np.exp(-(d / np.float64(sigma)) ** 2), axis=0)
