"""Caller for ok_jax2912_gather_static_xmod: the index is static in the jit."""
import os
import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ok_jax2912_gather_static_xmod import gather_rows  # noqa: E402


@partial(jax.jit, static_argnums=(1,))
def picked_energy(x, idx):
    return jnp.sum(gather_rows(x, idx) ** 2)


def eval_fn(x, idx):
    return picked_energy(x, idx)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0, 0.25], np.float32), 2)


def eval_reference(x, idx):
    return np.asarray(x, np.float64)[idx] ** 2
