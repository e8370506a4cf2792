"""Caller for ok_nufftax13_constant_kernel_xmod: the kernel width is a Python constant."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ok_nufftax13_constant_kernel_xmod import NODES, interpolate  # noqa: E402

WIDTH = 0.3
LOCS = np.array([-0.4, 0.2, 0.7], np.float32)


def make_kernel(width):
    return lambda d: jnp.exp(-(d * d) / width)


@jax.jit
def loss(vals):
    return interpolate(make_kernel(WIDTH), LOCS, vals)


def eval_fn(vals):
    return loss(vals)


def eval_inputs():
    return (np.array([0.5, 1.5, -1.0], np.float32),)


def eval_reference(vals):
    d = NODES[None, :].astype(np.float64) - LOCS[:, None]
    return np.sum(np.asarray(vals, np.float64)[:, None] * np.exp(-(d * d) / WIDTH), axis=0)
