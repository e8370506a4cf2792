"""numpyro: log(1 - exp(x)) with a defjvps lambda.

Adapted from pyro-ppl/numpyro:numpyro/distributions/util.py:457.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/numpyro_log1mexp', 'family': 'mutation', 'expect': 'ok', 'library': 'numpyro', 'source': 'pyro-ppl/numpyro:numpyro/distributions/util.py:457', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@jax.custom_jvp
def log1mexp(x):
    return jnp.where(x > -0.6931472, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


log1mexp.defjvps(lambda t, ans, x: -t / jnp.expm1(-x))


def eval_fn(x):
    return log1mexp(x)


def eval_inputs():
    return (np.array([-0.3, -1.0, -2.5], np.float32),)


def eval_reference(x):
    return np.log(1 - np.exp(np.asarray(x, np.float64)))
