"""tensorflow-probability: maximum whose tangent selects one side.

Adapted from tensorflow/probability:tensorflow_probability/python/internal/backend/numpy/numpy_math.py:755.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/jvp_params_swapped/tfp_maximum', 'family': 'mutation', 'expect': 'unknown', 'library': 'tensorflow-probability', 'source': 'tensorflow/probability:tensorflow_probability/python/internal/backend/numpy/numpy_math.py:755', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_params_swapped', 'base': 'tfp_maximum'}

@jax.custom_jvp
def _maximum_(x, y):
    return jnp.maximum(x, y)

@_maximum_.defjvp
def _maximum_jvp(tangents, primals):
    x, y = primals
    dx, dy = tangents
    selected_x = jnp.where(x >= y, jnp.ones_like(x), jnp.zeros_like(x))
    return (_maximum_(x, y), selected_x * dx + (1 - selected_x) * dy)

def eval_fn(x, y):
    return _maximum_(x, y) * jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.3], np.float32))

def eval_reference(x, y):
    return np.maximum(np.asarray(x, np.float64), np.asarray(y, np.float64)) * np.array([1.0, 2.0, 3.0])
