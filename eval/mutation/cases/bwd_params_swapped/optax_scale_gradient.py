"""optax: scale the gradient of a pytree; the residual is the scale.

Adapted from google-deepmind/optax:optax/_src/utils.py:162.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/optax_scale_gradient', 'family': 'mutation', 'expect': 'unknown', 'library': 'optax', 'source': 'google-deepmind/optax:optax/_src/utils.py:162', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'optax_scale_gradient'}

@jax.custom_vjp
def _scale_gradient(inputs, scale):
    del scale
    return inputs

def _scale_gradient_fwd(inputs, scale):
    return (_scale_gradient(inputs, scale), scale)

def _scale_gradient_bwd(g, scale):
    return (jax.tree.map(lambda g_: g_ * scale, g), None)
_scale_gradient.defvjp(_scale_gradient_fwd, _scale_gradient_bwd)

def eval_fn(x, scale):
    return _scale_gradient(x, scale)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.float32(0.25))

def eval_reference(x, scale):
    return np.asarray(x, np.float64)

def eval_grad_reference(x, scale):
    return (np.full(np.shape(x), float(scale)),)
