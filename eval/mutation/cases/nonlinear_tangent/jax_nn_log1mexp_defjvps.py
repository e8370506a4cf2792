"""jax: log(1 - exp(-x)) with a defjvps lambda.

Adapted from jax-ml/jax:jax/_src/nn/functions.py:1533.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nonlinear_tangent/jax_nn_log1mexp_defjvps', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/nn/functions.py:1533', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nonlinear_tangent', 'base': 'jax_nn_log1mexp_defjvps'}

@jax.custom_jvp
def log1mexp(x):
    return jnp.where(x < 0.6931472, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))
log1mexp.defjvps(lambda g, ans, x: g * g / jnp.expm1(x))

def eval_fn(x):
    return log1mexp(x)

def eval_inputs():
    return (np.array([0.3, 1.0, 2.5], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.log(1 - np.exp(-x))
