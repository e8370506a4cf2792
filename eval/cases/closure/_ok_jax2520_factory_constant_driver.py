"""Caller for ok_jax2520_factory_constant_xmod: the rate is a Python constant."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ok_jax2520_factory_constant_xmod import make_decay  # noqa: E402

RATE = 0.8
decay = make_decay(RATE)


def loss(y):
    return jnp.sum(decay(y))


loss_grad = jax.grad(loss)


def eval_fn(y):
    return loss(y)


def eval_inputs():
    return (np.array([0.5, 1.0], np.float32),)


def eval_reference(y):
    return np.sum(np.exp(-RATE * np.asarray(y, np.float64)))
