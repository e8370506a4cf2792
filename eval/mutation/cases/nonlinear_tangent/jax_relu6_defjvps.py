"""jax: relu6 with a defjvps lambda.

Adapted from jax-ml/jax:jax/_src/nn/functions.py:828.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nonlinear_tangent/jax_relu6_defjvps', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/nn/functions.py:828', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nonlinear_tangent', 'base': 'jax_relu6_defjvps'}

@jax.custom_jvp
def relu6(x):
    return jnp.minimum(jnp.maximum(x, 0), 6.0)
relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g * g, lax.full_like(g, 0)))

def eval_fn(x):
    return jnp.sin(relu6(x))

def eval_inputs():
    return (np.array([0.5, -1.25, 7.0, 3.0], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sin(np.minimum(np.maximum(x, 0), 6.0))
