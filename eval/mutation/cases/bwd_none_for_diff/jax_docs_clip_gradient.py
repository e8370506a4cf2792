"""jax: gradient clipping with a custom_vjp; bounds are Python floats in differentiable positions.

Adapted from jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:356.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_none_for_diff/jax_docs_clip_gradient', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/notebooks/Custom_derivative_rules_for_Python_code.md:356', 'argnums': (2,), 'extra': ['grad_jit'], 'operator': 'bwd_none_for_diff', 'base': 'jax_docs_clip_gradient'}

@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x

def clip_gradient_fwd(lo, hi, x):
    return (x, (lo, hi))

def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, None)
clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

def eval_fn(lo, hi, x):
    return clip_gradient(lo, hi, x)

def eval_inputs():
    return (-0.5, 0.5, np.array([0.5, 1.5, -0.7], np.float32))

def eval_reference(lo, hi, x):
    return np.asarray(x, np.float64)

def eval_grad_reference(lo, hi, x):
    return (np.full(np.shape(x), 0.5),)
