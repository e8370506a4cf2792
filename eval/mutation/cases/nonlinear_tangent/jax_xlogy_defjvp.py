"""jax: xlogy with a two-argument jvp rule registered by a call.

Adapted from jax-ml/jax:jax/_src/scipy/special.py:968.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nonlinear_tangent/jax_xlogy_defjvp', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/scipy/special.py:968', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'nonlinear_tangent', 'base': 'jax_xlogy_defjvp'}

@jax.custom_jvp
def xlogy(x, y):
    safe_y = jnp.where(x == 0, jnp.ones_like(y), y)
    return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log(safe_y))

def _xlogy_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    result = xlogy(x, y)
    return (result, (x_dot * x_dot * jnp.log(y) + y_dot * x / y).astype(result.dtype))
xlogy.defjvp(_xlogy_jvp)

def eval_fn(x, y):
    return xlogy(x, y)

def eval_inputs():
    return (np.array([0.5, 1.5, 2.0], np.float32), np.array([1.5, 0.5, 3.0], np.float32))

def eval_reference(x, y):
    x, y = (np.asarray(x, np.float64), np.asarray(y, np.float64))
    return x * np.log(y)
