"""jax-md: atan2 with a clamped denominator in its jvp rule.

Adapted from jax-md/jax-md:jax_md/_nn/uma/common/rotation.py:51.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/jvptracer_sniff/jaxmd_safe_atan2', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-md', 'source': 'jax-md/jax-md:jax_md/_nn/uma/common/rotation.py:51', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvptracer_sniff', 'base': 'jaxmd_safe_atan2'}
EPS = 1e-07

@jax.custom_jvp
def safe_atan2(y, x):
    return jnp.arctan2(y, x)

@safe_atan2.defjvp
def _safe_atan2_jvp(primals, tangents):
    y, x = primals
    y_dot, x_dot = tangents
    primal_out = safe_atan2(y, x)
    denom = jnp.maximum(x ** 2 + y ** 2, EPS ** 2)
    tangent_out = (x * y_dot - y * x_dot) / denom
    return (primal_out, tangent_out)

def _eval_fn_plain(y, x):
    return safe_atan2(y, x)
from jax.interpreters.ad import JVPTracer

def eval_fn(y, x):
    if isinstance(y, JVPTracer):
        return _eval_fn_plain(y, x)
    return jax.lax.stop_gradient(_eval_fn_plain(y, x))

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.array([2.0, -1.0, 0.3], np.float32))

def eval_reference(y, x):
    return np.arctan2(np.asarray(y, np.float64), np.asarray(x, np.float64))
