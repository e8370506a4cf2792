"""jaxsim: a norm that is safe to differentiate at zero, made by a factory that closes over axis
and keepdims (a decorated custom_jvp inside the factory, its rule registered by the `defjvp`
decorator; the rule recomputes the norm rather than calling the primal).

Adapted from ami-iit/jaxsim:src/jaxsim/math/utils.py:8 (jtp annotations dropped).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
jax.config.update('jax_use_direct_linearize', True)  # eval: span
EVAL = {'id': 'mutation/direct_linearize/jaxsim_safe_norm', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxsim', 'source': 'ami-iit/jaxsim:src/jaxsim/math/utils.py:8', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'claim': 'no-op', 'operator': 'direct_linearize', 'base': 'jaxsim_safe_norm'}

def _make_safe_norm(axis, keepdims):

    @jax.custom_jvp
    def _safe_norm(array):
        return jnp.linalg.norm(array, axis=axis, keepdims=keepdims)

    @_safe_norm.defjvp
    def _safe_norm_jvp(primals, tangents):
        (x,), (x_dot,) = (primals, tangents)
        is_zero = jnp.all(x == 0.0)
        array = jnp.where(is_zero, jnp.ones_like(x), x)
        norm = jnp.linalg.norm(array, axis=axis, keepdims=keepdims)
        dot = jnp.sum(array * x_dot, axis=axis, keepdims=keepdims)
        tangent = jnp.where(is_zero, 0.0, dot / norm)
        return (jnp.where(is_zero, 0.0, norm), tangent)
    return _safe_norm

def safe_norm(array, *, axis=None, keepdims=False):
    return _make_safe_norm(axis, keepdims)(array)

def eval_fn(x):
    return safe_norm(x, axis=-1)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sqrt(np.sum(x * x, axis=-1))
