"""Caller for jax8356_rules_in_module_xmod: a user module that registers the library's rules."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax8356_rules_in_module_xmod import scaled_shift_bwd, scaled_shift_fwd, scaled_shift_impl  # noqa: E402

scaled_shift = jax.custom_vjp(scaled_shift_impl)
scaled_shift.defvjp(scaled_shift_fwd, scaled_shift_bwd)


def eval_fn(x):
    return scaled_shift(x, jnp.ones_like(x))


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(x):
    return 3.0 * np.asarray(x, np.float64) + 1.0
