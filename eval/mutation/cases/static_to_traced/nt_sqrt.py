"""neural-tangents: sqrt with a nondiff tolerance that has a default.

Adapted from google/neural-tangents:neural_tangents/_src/stax/elementwise.py:1278.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/static_to_traced/nt_sqrt', 'family': 'mutation', 'expect': 'unknown', 'library': 'neural-tangents', 'source': 'google/neural-tangents:neural_tangents/_src/stax/elementwise.py:1278', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'static_to_traced', 'base': 'nt_sqrt'}

@jax.custom_jvp
def _sqrt(x, tol=0.0):
    return jnp.sqrt(jnp.maximum(x, tol))

@_sqrt.defjvp
def _sqrt_jvp(primals, tangents):
    x, tol = primals
    x_dot, _tol_dot = tangents
    safe_tol = max(tol, 1e-30)
    square_root = _sqrt(x, safe_tol)
    square_root_out = _sqrt(x, tol)
    return (square_root_out, jnp.where(x > safe_tol, x_dot / (2 * square_root), 0.0))

def eval_fn(x):
    return _sqrt(x, 1e-06)

def eval_inputs():
    return (np.array([0.5, 1.5, 2.7], np.float32),)

def eval_reference(x):
    return np.sqrt(np.asarray(x, np.float64))
