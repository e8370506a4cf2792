"""jax: logit with a defjvps lambda.

Adapted from jax-ml/jax:jax/_src/scipy/special.py:912.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/jax_logit_defjvps', 'family': 'mutation', 'expect': 'ok', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/scipy/special.py:912', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@jax.custom_jvp
def logit(x):
    return jnp.log(x / (1 - x))


logit.defjvps(lambda g, ans, x: g / (x * (1 - x)))


def eval_fn(x):
    return logit(x)


def eval_inputs():
    return (np.array([0.25, 0.5, 0.8], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.log(x / (1 - x))
