"""jax-md: arccos with a clamped denominator in its jvp rule.

Adapted from jax-md/jax-md:jax_md/_nn/uma/common/rotation.py:29.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/jaxmd_safe_acos', 'family': 'mutation', 'expect': 'ok', 'library': 'jax-md', 'source': 'jax-md/jax-md:jax_md/_nn/uma/common/rotation.py:29', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

EPS = 1e-7


@jax.custom_jvp
def safe_acos(x):
    return jnp.arccos(x)


@safe_acos.defjvp
def _safe_acos_jvp(primals, tangents):
    (x,) = primals
    (x_dot,) = tangents
    primal_out = safe_acos(x)
    x_clamped = jnp.clip(x, -1 + EPS, 1 - EPS)
    denom = jnp.sqrt(1 - x_clamped**2)
    denom = jnp.maximum(denom, EPS)
    tangent_out = -x_dot / denom
    return primal_out, tangent_out


def eval_fn(x):
    return safe_acos(x)


def eval_inputs():
    return (np.array([0.5, -0.3, 0.8], np.float32),)


def eval_reference(x):
    return np.arccos(np.asarray(x, np.float64))
