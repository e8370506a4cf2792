"""Caller for nufftax13_kernel_closure_xmod (the oracle passes that module as `case`)."""
import jax
import jax.numpy as jnp
import numpy as np

case = globals()["case"]
POINTS = np.array([-0.3, 0.1, 0.6], np.float32)
WEIGHTS = np.array([1.0, -0.5, 2.0], np.float32)


@jax.jit
def loss(sigma):
    return case.spread(POINTS, WEIGHTS, lambda d: jnp.exp(-(d / sigma) ** 2))


def eval_fn(sigma):
    return loss(sigma)


def eval_inputs():
    return (np.float32(0.5),)


def eval_reference(sigma):
    d = case.GRID[None, :].astype(np.float64) - POINTS[:, None]
    return np.sum(WEIGHTS[:, None] * np.exp(-(d / np.float64(sigma)) ** 2), axis=0)
