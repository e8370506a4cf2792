"""optax: weighted log-softmax with a jvp rule registered by a call.

Adapted from google-deepmind/optax:optax/losses/_classification.py:166.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/primal_order/optax_weighted_logsoftmax', 'family': 'mutation', 'expect': 'unknown', 'library': 'optax', 'source': 'google-deepmind/optax:optax/losses/_classification.py:166', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'primal_order', 'base': 'optax_weighted_logsoftmax'}

@jax.custom_jvp
def weighted_logsoftmax(x, weights):
    logsoftmax_x = jax.nn.log_softmax(x, axis=-1)
    return jnp.where(weights != 0.0, weights * logsoftmax_x, jnp.zeros_like(logsoftmax_x))

def _weighted_logsoftmax_jvp(primals, tangents):
    weights, x = primals
    x_dot, weights_dot = tangents
    logsoftmax_x = jax.nn.log_softmax(x, axis=-1)
    result = jnp.where(weights != 0.0, weights * logsoftmax_x, jnp.zeros_like(logsoftmax_x))
    out_tangents = weights * x_dot - weights * jnp.sum(x_dot * jax.nn.softmax(x, axis=-1), axis=-1, keepdims=True) + weights_dot * logsoftmax_x
    return (result, out_tangents)
weighted_logsoftmax.defjvp(_weighted_logsoftmax_jvp)

def eval_fn(x, weights):
    return weighted_logsoftmax(x, weights) * jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([0.2, 0.3, 0.5], np.float32))

def eval_reference(x, weights):
    x, w = (np.asarray(x, np.float64), np.asarray(weights, np.float64))
    lsm = x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True))
    return w * lsm * np.array([1.0, 2.0, 3.0])
