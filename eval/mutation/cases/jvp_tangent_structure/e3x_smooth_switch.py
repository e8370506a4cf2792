"""e3x: a smooth switch from 0 to 1 between x0 and x1, a custom_jvp created through
`functools.partial` with the two boundaries in nondiff_argnums (Python floats tested with `if`);
the rule, registered by the `defjvp` decorator, takes them before primals and tangents.

Adapted from google-research/e3x:e3x/nn/functions/switch.py:40 (jaxtyping annotations and the
docstring dropped).
"""
import functools
from functools import partial
import math
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/jvp_tangent_structure/e3x_smooth_switch', 'family': 'mutation', 'expect': 'unknown', 'library': 'e3x', 'source': 'google-research/e3x:e3x/nn/functions/switch.py:40', 'argnums': (0,), 'static': (1, 2), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_structure', 'base': 'e3x_smooth_switch'}
_SMOOTH_SWITCH_SLOPE = math.sqrt(3) / 2

def _smooth_switch_exp(x):
    """Helper function for smooth_switch and its JVP implementation."""
    return jnp.exp(_SMOOTH_SWITCH_SLOPE * (1 / x - 1 / (1 - x)))

@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def smooth_switch(x, x0=0.0, x1=1.0):
    if x0 >= x1:
        raise ValueError(f'input x1 must be larger than x0, received x0={x0} and x1={x1}')
    if x0 != 0.0 or x1 != 1.0:
        x = (x - x0) / (x1 - x0)
    eps = jnp.finfo(x.dtype).epsneg
    small = x < eps
    large = x > 1 - eps
    safe_x = jnp.where(jnp.logical_or(small, large), 0.5, x)
    return jnp.where(small, 0, jnp.where(large, 1, 1 / (1 + _smooth_switch_exp(safe_x))))

@smooth_switch.defjvp
def _smooth_switch_jvp_impl(x0, x1, primals, tangents):
    """JVP implementation for smooth_switch."""
    x, = primals
    x_dot, = tangents
    if x0 != 0.0 or x1 != 1.0:
        x = (x - x0) / (x1 - x0)
        x_dot = x_dot / (x1 - x0)
    eps = jnp.finfo(x.dtype).epsneg
    small = x < eps
    large = x > 1 - eps
    small_or_large = jnp.logical_or(small, large)
    safe_x = jnp.where(small_or_large, 0.5, x)
    exp = _smooth_switch_exp(safe_x)
    primal_out = jnp.where(small, 0, jnp.where(large, 1, 1 / (1 + exp)))
    primal_out2 = primal_out * primal_out
    raw_tangent = -_SMOOTH_SWITCH_SLOPE * (-1 / safe_x ** 2 - 1 / (1 - safe_x) ** 2) * exp * primal_out2
    zero_factors = jnp.logical_or(primal_out2 == 0, exp == 0)
    mask = jnp.logical_or(small_or_large, zero_factors)
    tangent_out = jnp.where(mask, 0, raw_tangent) * x_dot
    return (primal_out, (tangent_out,))

def eval_fn(x, x0, x1):
    return smooth_switch(x, x0, x1)

def eval_inputs():
    return (np.array([0.1, 0.6, 1.1], np.float32), -0.5, 1.5)

def eval_reference(x, x0, x1):
    x = (np.asarray(x, np.float64) - x0) / (x1 - x0)
    return 1.0 / (1.0 + np.exp(math.sqrt(3) / 2 * (1 / x - 1 / (1 - x))))
