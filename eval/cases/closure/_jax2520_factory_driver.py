"""Caller for jax2520_factory_param_xmod: the script differentiates with respect to the rate."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax2520_factory_param_xmod import make_decay  # noqa: E402


def loss(rate, y):
    return jnp.sum(make_decay(rate)(y))


loss_grad = jax.grad(loss)


def eval_fn(rate, y):
    return loss(rate, y)


def eval_inputs():
    return (np.float32(0.8), np.array([0.5, 1.0], np.float32))


def eval_reference(rate, y):
    return np.sum(np.exp(-np.float64(rate) * np.asarray(y, np.float64)))
