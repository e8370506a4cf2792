"""distrax: x * y that is 0 where y == 0, with a symbolic_zeros jvp rule.

Adapted from google-deepmind/distrax:distrax/_src/utils/math.py:29.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/tangent_order/distrax_multiply_no_nan', 'family': 'mutation', 'expect': 'unknown', 'library': 'distrax', 'source': 'google-deepmind/distrax:distrax/_src/utils/math.py:29', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'tangent_order', 'base': 'distrax_multiply_no_nan'}
from jax.custom_derivatives import SymbolicZero

@jax.custom_jvp
def multiply_no_nan(x, y):
    dtype = jnp.result_type(x, y)
    return jnp.where(y == 0, jnp.zeros((), dtype=dtype), x * y)

def add_maybe_symbolic(x, y):
    if isinstance(x, SymbolicZero):
        return y
    elif isinstance(y, SymbolicZero):
        return x
    else:
        return x + y

def scale_maybe_symbolic(tangent, scale):
    if isinstance(tangent, SymbolicZero):
        return tangent
    else:
        return tangent * scale

@functools.partial(multiply_no_nan.defjvp, symbolic_zeros=True)
def multiply_no_nan_jvp(primals, tangents):
    x, y = primals
    y_dot, x_dot = tangents
    primal_out = multiply_no_nan(x, y)
    tangent_out_1 = scale_maybe_symbolic(x_dot, y)
    tangent_out_2 = scale_maybe_symbolic(y_dot, x)
    return (primal_out, add_maybe_symbolic(tangent_out_1, tangent_out_2))

def eval_fn(x, y):
    return multiply_no_nan(x, y)

def eval_inputs():
    return (np.array([0.5, 1.5, 2.2], np.float32), np.array([2.0, -1.0, 0.5], np.float32))

def eval_reference(x, y):
    return np.asarray(x, np.float64) * np.asarray(y, np.float64)
