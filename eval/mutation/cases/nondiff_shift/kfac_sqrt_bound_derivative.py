"""kfac-jax: sqrt with a bounded derivative; the bound is nondiff, the rule a module function.

Adapted from google-deepmind/kfac-jax:kfac_jax/_src/utils/math.py:1181.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nondiff_shift/kfac_sqrt_bound_derivative', 'family': 'mutation', 'expect': 'unknown', 'library': 'kfac-jax', 'source': 'google-deepmind/kfac-jax:kfac_jax/_src/utils/math.py:1181', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_shift', 'base': 'kfac_sqrt_bound_derivative'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _sqrt_bound_derivative(x, max_gradient):
    del max_gradient
    return jnp.sqrt(x)

def _stable_sqrt_fwd(max_gradient, primals, tangents):
    x, = primals
    x_pre = jnp.maximum(x, 1 / (4 * max_gradient ** 2))
    _, tangent = jax.jvp(jnp.sqrt, (x_pre,), tangents)
    return (jnp.sqrt(x), tangent)
_sqrt_bound_derivative.defjvp(_stable_sqrt_fwd)

def eval_fn(x):
    return _sqrt_bound_derivative(x, 10.0)

def eval_inputs():
    return (np.array([0.5, 1.5, 2.7], np.float32),)

def eval_reference(x):
    return np.sqrt(np.asarray(x, np.float64))
