"""Caller for jax20889_imported_table_xmod: imports the library by name, builds the table under jit."""
import os
import sys

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax20889_imported_table_xmod import init_table, warp  # noqa: E402


@jax.jit
def model(x):
    t = init_table()
    return warp(t, x)


def eval_fn(x):
    return model(x)


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    return np.float64(x) * 1.0
