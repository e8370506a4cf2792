"""jax: x log x with a jvp rule registered by a call.

Adapted from jax-ml/jax:jax/_src/scipy/special.py:1012.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/jax_xlogx_defjvp', 'family': 'mutation', 'expect': 'ok', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/scipy/special.py:1012', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@jax.custom_jvp
def _xlogx(x):
    return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log(jnp.where(x == 0, 1.0, x)))


def _xlogx_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _xlogx(x), x_dot * (jnp.log(x) + 1)


_xlogx.defjvp(_xlogx_jvp)


def eval_fn(x):
    return _xlogx(x)


def eval_inputs():
    return (np.array([0.5, 1.5, 2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return x * np.log(x)
