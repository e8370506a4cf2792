"""neural-tangents: arctan2 with a nondiff fill value.

Adapted from google/neural-tangents:neural_tangents/_src/stax/elementwise.py:1293.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/static_to_traced/nt_arctan2', 'family': 'mutation', 'expect': 'unknown', 'library': 'neural-tangents', 'source': 'google/neural-tangents:neural_tangents/_src/stax/elementwise.py:1293', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'static_to_traced', 'base': 'nt_arctan2'}

@jax.custom_jvp
def _arctan2(x, y, fill_zero=None):
    if fill_zero is not None:
        return jnp.where(jnp.bitwise_and(x == 0.0, y == 0.0), fill_zero, jnp.arctan2(x, y))
    return jnp.arctan2(x, y)

@_arctan2.defjvp
def _arctan2_jvp(primals, tangents):
    x, y, fill_zero = primals
    x_dot, y_dot, _fill_zero_dot = tangents
    primal_out = _arctan2(x, y, fill_zero)
    safe_tol = 1e-30
    denom = jnp.maximum(x ** 2 + y ** 2, safe_tol)
    tangent_out = x_dot * (y / denom) - y_dot * (x / denom)
    return (primal_out, tangent_out)

def eval_fn(x, y):
    return _arctan2(x, y, 0.0)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.3], np.float32))

def eval_reference(x, y):
    return np.arctan2(np.asarray(x, np.float64), np.asarray(y, np.float64))
