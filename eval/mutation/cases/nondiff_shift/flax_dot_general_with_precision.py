"""flax: dot_general with the dimension numbers and precision in nondiff_argnums.

Adapted from google/flax:flax/linen/fp8_ops.py:496.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nondiff_shift/flax_dot_general_with_precision', 'family': 'mutation', 'expect': 'unknown', 'library': 'flax', 'source': 'google/flax:flax/linen/fp8_ops.py:496', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_shift', 'base': 'flax_dot_general_with_precision'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
def dot_general_with_precision(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    return lax.dot_general(lhs, rhs, dimension_numbers, precision=lax.Precision.DEFAULT)

@dot_general_with_precision.defjvp
def dot_general_with_precision_jvp(dimension_numbers, precision, preferred_element_type, primals, tangents):
    lhs, rhs = primals
    lhs_dot, rhs_dot = tangents
    out = lax.dot_general(lhs, rhs, dimension_numbers, precision=lax.Precision.DEFAULT)
    grad_out = lax.dot_general(lhs_dot, rhs, dimension_numbers, precision=lax.Precision.HIGHEST) + lax.dot_general(lhs, rhs_dot, dimension_numbers, precision=lax.Precision.HIGHEST)
    return (out, grad_out)
DIMS = (((1,), (0,)), ((), ()))

def eval_fn(lhs, rhs):
    return dot_general_with_precision(lhs, rhs, DIMS, None, None) * jnp.array([1.0, -2.0])

def eval_inputs():
    return (np.array([[0.5, 1.5], [-0.7, 0.2]], np.float32), np.array([[1.0, 0.5], [-0.3, 2.0]], np.float32))

def eval_reference(lhs, rhs):
    return np.asarray(lhs, np.float64) @ np.asarray(rhs, np.float64) * np.array([1.0, -2.0])
