"""jax: log(1 + exp(x)) with a defjvps lambda.

Adapted from jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:247.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/jax_docs_log1pexp_defjvps', 'family': 'mutation', 'expect': 'ok', 'library': 'jax', 'source': 'jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:247', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


log1pexp.defjvps(lambda t, ans, x: (1 - 1 / (1 + jnp.exp(x))) * t)


def eval_fn(x):
    return log1pexp(x)


def eval_inputs():
    return (np.array([0.5, -3.0, 4.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.log1p(np.exp(x))
