"""Caller for nufftax13_factory_kernel_xmod: a user script importing the library module by name."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nufftax13_factory_kernel_xmod import NODES, interpolate  # noqa: E402

LOCS = np.array([-0.4, 0.2, 0.7], np.float32)
VALS = np.array([0.5, 1.5, -1.0], np.float32)


def make_kernel(width):
    return lambda d: jnp.exp(-(d * d) / width)


@jax.jit
def loss(width):
    return interpolate(make_kernel(width), LOCS, VALS)


def eval_fn(width):
    return loss(width)


def eval_inputs():
    return (np.float32(0.3),)


def eval_reference(width):
    d = NODES[None, :].astype(np.float64) - LOCS[:, None]
    return np.sum(VALS[:, None] * np.exp(-(d * d) / np.float64(width)), axis=0)
