"""closure hazard: a kernel callable in a custom_vjp nondiff slot closes over the traced width being differentiated.

Report: GragasLab/nufftax#13 https://github.com/GragasLab/nufftax/issues/13 ("JIT bug under
differentiation w.r.t custom kernel parameters"). The loss built a Gaussian kernel from `sigma`
and passed it to a custom_vjp spreading routine as a nondiff argument; `grad` of the jitted loss
raised "Detected differentiation of a custom_vjp function with respect to a closed-over value".
The fix (nufftax PR #15) closure-converts the kernel.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/nufftax13_kernel_closure_jit", "family": "closure", "expect": "hazard",
    "source": "GragasLab/nufftax#13", "url": "https://github.com/GragasLab/nufftax/issues/13",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}
GRID = np.linspace(-1.0, 1.0, 5).astype(np.float32)
POINTS = np.array([-0.3, 0.1, 0.6], np.float32)
WEIGHTS = np.array([1.0, -0.5, 2.0], np.float32)


@partial(jax.custom_vjp, nondiff_argnums=(2,))  # eval: span
def spread(points, weights, kernel):  # eval: span
    return jnp.sum(weights[:, None] * kernel(GRID[None, :] - points[:, None]), axis=0)


def spread_fwd(points, weights, kernel):
    return spread(points, weights, kernel), (points, weights)


def spread_bwd(kernel, res, g):
    points, weights = res
    _, vjp = jax.vjp(lambda p, w: jnp.sum(w[:, None] * kernel(GRID[None, :] - p[:, None]), axis=0),
                     points, weights)
    return vjp(g)


spread.defvjp(spread_fwd, spread_bwd)


@jax.jit
def loss(sigma):
    kernel = lambda d: jnp.exp(-(d / sigma) ** 2)  # eval: span
    return spread(POINTS, WEIGHTS, kernel)  # eval: span


def eval_fn(sigma):
    return loss(sigma)


def eval_inputs():
    return (np.float32(0.5),)


def eval_reference(sigma):
    d = GRID[None, :].astype(np.float64) - POINTS[:, None]
    return np.sum(WEIGHTS[:, None] * np.exp(-(d / np.float64(sigma)) ** 2), axis=0)
