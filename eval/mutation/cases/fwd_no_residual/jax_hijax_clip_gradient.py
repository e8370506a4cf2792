"""jax: identity whose cotangent is clipped to [lo, hi]; bwd returns None for the bounds (they are
residuals, the output does not depend on them).

Adapted from jax-ml/jax:docs/hijax_custom_derivatives.py:310 (the ClipGradient primitive's
vjp_fwd and vjp_bwd_retval, as a custom_vjp).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/fwd_no_residual/jax_hijax_clip_gradient', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/hijax_custom_derivatives.py:310', 'argnums': (2,), 'extra': ['grad_jit'], 'operator': 'fwd_no_residual', 'base': 'jax_hijax_clip_gradient'}

@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x

def clip_gradient_fwd(lo, hi, x):
    return clip_gradient(lo, hi, x)

def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))
clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

def eval_fn(lo, hi, x):
    return clip_gradient(lo, hi, x) * jnp.array([0.5, 2.0, -3.0])

def eval_inputs():
    return (np.float32(-1.0), np.float32(1.0), np.array([0.5, 1.5, -0.7], np.float32))

def eval_reference(lo, hi, x):
    return np.asarray(x, np.float64) * np.array([0.5, 2.0, -3.0])

def eval_grad_reference(lo, hi, x):
    return (np.clip(np.array([0.5, 2.0, -3.0]), float(lo), float(hi)),)
