"""jax: relu with a defjvps lambda.

Adapted from jax-ml/jax:jax/_src/nn/functions.py:107.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nonlinear_tangent/jax_relu_defjvps', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/nn/functions.py:107', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nonlinear_tangent', 'base': 'jax_relu_defjvps'}

@jax.custom_jvp
def relu(x):
    return jnp.maximum(x, 0)
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g * g, lax.full_like(g, 0)))

def eval_fn(x):
    return relu(x) * x

def eval_inputs():
    return (np.array([0.5, -1.25, 2.0], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.maximum(x, 0) * x
