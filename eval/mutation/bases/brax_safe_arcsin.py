"""brax: arcsin with safety clipping in its jvp rule.

Adapted from google/brax:brax/math.py:209.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/brax_safe_arcsin', 'family': 'mutation', 'expect': 'ok', 'library': 'brax', 'source': 'google/brax:brax/math.py:209', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@jax.custom_jvp
def safe_arcsin(x):
    return jnp.arcsin(x)


@safe_arcsin.defjvp
def _safe_arcsin_jvp(primal, tangent):
    (x,) = primal
    (x_dot,) = tangent
    primal_out = safe_arcsin(x)
    tangent_out = x_dot / jnp.sqrt(1.0 - jnp.clip(x, -1 + 1e-7, 1 - 1e-7) ** 2.0)
    return primal_out, tangent_out


def eval_fn(x):
    return safe_arcsin(x) * x


def eval_inputs():
    return (np.array([0.5, -0.3, 0.8], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.arcsin(x) * x
