"""distrax: x ** y that is 1 where y == 0, with a two-argument jvp rule.

Adapted from google-deepmind/distrax:distrax/_src/utils/math.py:82.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
jax.config.update('jax_use_direct_linearize', True)  # eval: span
EVAL = {'id': 'mutation/direct_linearize/distrax_power_no_nan', 'family': 'mutation', 'expect': 'unknown', 'library': 'distrax', 'source': 'google-deepmind/distrax:distrax/_src/utils/math.py:82', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'claim': 'no-op', 'operator': 'direct_linearize', 'base': 'distrax_power_no_nan'}

@jax.custom_jvp
def power_no_nan(x, y):
    dtype = jnp.result_type(x, y)
    return jnp.where(y == 0, jnp.ones((), dtype=dtype), jnp.power(x, y))

@power_no_nan.defjvp
def power_no_nan_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    primal_out = power_no_nan(x, y)
    tangent_out = y * power_no_nan(x, y - 1) * x_dot + primal_out * jnp.log(x) * y_dot
    return (primal_out, tangent_out)

def eval_fn(x, y):
    return power_no_nan(x, y)

def eval_inputs():
    return (np.array([0.5, 1.5, 2.2], np.float32), np.array([2.0, -1.0, 0.5], np.float32))

def eval_reference(x, y):
    return np.power(np.asarray(x, np.float64), np.asarray(y, np.float64))
