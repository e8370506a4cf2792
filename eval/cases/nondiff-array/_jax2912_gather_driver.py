"""Caller for jax2912_gather_index_xmod: the index array is traced by jit."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax2912_gather_index_xmod import gather_rows  # noqa: E402


@jax.jit
def picked_energy(x, idx):
    return jnp.sum(gather_rows(x, idx) ** 2)


def eval_fn(x, idx):
    return picked_energy(x, idx)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0, 0.25], np.float32), np.array([0, 2], np.int32))


def eval_reference(x, idx):
    return np.sum(np.asarray(x, np.float64)[np.asarray(idx)] ** 2)
