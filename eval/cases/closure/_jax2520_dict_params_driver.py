"""Caller for jax2520_dict_params_inner_vjp_xmod: the training script differentiates with respect to the params."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax2520_dict_params_inner_vjp_xmod import dense  # noqa: E402


def objective(w, b, x):
    return jnp.sum(dense({"w": w, "b": b}, x) ** 2)


objective_grad = jax.grad(objective, argnums=(0, 1))


def eval_fn(w, b, x):
    return dense({"w": w, "b": b}, x)


def eval_inputs():
    return (np.float32(0.9), np.float32(-0.2), np.array([0.4, -1.0, 2.0], np.float32))


def eval_reference(w, b, x):
    return np.tanh(np.float64(w) * np.asarray(x, np.float64) + np.float64(b))
