"""jax: softmax as a custom_jvp made by `partial(custom_jvp, nondiff_argnums=(1,))`, whose rule
(registered with `@_softmax.defjvp`) takes the axis first and unpacks three primals (the array,
an optional mask and a defaulted `initial`) while using only the first tangent.

Adapted from jax-ml/jax:jax/_src/nn/functions.py:615 (`custom_derivatives.custom_jvp` is
`jax.custom_jvp`; the usage weights the output, since the sum of a softmax is constant).
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/jax_softmax_axis', 'family': 'mutation', 'expect': 'ok', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/nn/functions.py:615', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _softmax(
    x,
    axis=-1,
    where=None,
    initial=-np.inf):
    x_max = jnp.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, initial)
    unnormalized = jnp.exp(x_safe - x_max)
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = jnp.where(where, result, 0)
    return result


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    (x, where, initial), (x_dot, _, _) = primals, tangents
    y = _softmax(x, axis, where, initial)
    return y, y * (x_dot - (y * x_dot).sum(axis, where=where, keepdims=True))


_WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def eval_fn(x):
    return _softmax(x, -1, None) * _WEIGHTS


def eval_inputs():
    return (np.array([0.5, 1.5, -0.7, 0.2], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) * _WEIGHTS.astype(np.float64)
