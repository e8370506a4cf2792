"""Caller for ok_closure_convert_minimize_xmod: the objective closes over the target being differentiated."""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ok_closure_convert_minimize_xmod import minimize  # noqa: E402


def solve_for(target):
    objective = lambda x: jnp.sum((x - target) ** 2) + 0.5 * jnp.sum(x ** 2)
    return minimize(objective, jnp.zeros(2))


target_grad = jax.grad(lambda t: jnp.sum(solve_for(t)))


def eval_fn(target):
    return solve_for(target)


def eval_inputs():
    return (np.array([1.0, -2.0], np.float32),)


def eval_reference(target):
    return np.asarray(target, np.float64) * (2.0 / 3.0)
