"""brax: arccos with safety clipping in its jvp rule.

Adapted from google/brax:brax/math.py:194.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/registered_twice/brax_safe_arccos', 'family': 'mutation', 'expect': 'unknown', 'library': 'brax', 'source': 'google/brax:brax/math.py:194', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'registered_twice', 'base': 'brax_safe_arccos'}

@jax.custom_jvp
def safe_arccos(x):
    return jnp.arccos(x)

@safe_arccos.defjvp
def _safe_arccos_jvp(primal, tangent):
    x, = primal
    x_dot, = tangent
    primal_out = safe_arccos(x)
    tangent_out = -x_dot / jnp.sqrt(1.0 - jnp.clip(x, -1 + 1e-07, 1 - 1e-07) ** 2.0)
    return (primal_out, tangent_out)
safe_arccos.defjvp(_safe_arccos_jvp)

def eval_fn(x):
    return safe_arccos(x)

def eval_inputs():
    return (np.array([0.5, -0.3, 0.8], np.float32),)

def eval_reference(x):
    return np.arccos(np.asarray(x, np.float64))
