"""optimistix: asarray with the dtype in nondiff_argnums, made in the call form.

Adapted from patrick-kidger/optimistix:optimistix/_misc.py:266.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/unregistered/optimistix_asarray', 'family': 'mutation', 'expect': 'unknown', 'library': 'optimistix', 'source': 'patrick-kidger/optimistix:optimistix/_misc.py:266', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'unregistered', 'base': 'optimistix_asarray'}

def _asarray(dtype, x):
    return jnp.asarray(x, dtype=dtype)
_asarray = jax.custom_jvp(_asarray, nondiff_argnums=(0,))

def _asarray_jvp(dtype, x, tx):
    x, = x
    tx, = tx
    return (_asarray(dtype, x), _asarray(dtype, tx))

def eval_fn(x):
    return jnp.sin(_asarray(jnp.float32, x))

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))
