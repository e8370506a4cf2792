"""tensorflow-probability: a custom_vjp made in the call form from a lambda inside a function, closing over a handler.

Adapted from tensorflow/probability:discussion/robust_inverse_graphics/util/math_util.py:47.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_bare/tfp_transform_gradients', 'family': 'mutation', 'expect': 'unknown', 'library': 'tensorflow-probability', 'source': 'tensorflow/probability:discussion/robust_inverse_graphics/util/math_util.py:47', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_bare', 'base': 'tfp_transform_gradients'}

def transform_gradients(x, handler_fn):
    wrapper = jax.custom_vjp(lambda x: x)

    def fwd(x):
        return (x, ())

    def bwd(_, g):
        return handler_fn(g)
    wrapper.defvjp(fwd, bwd)
    return wrapper(x)

def eval_fn(x):
    return transform_gradients(x, lambda g: jnp.clip(g, -0.5, 0.5))

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.asarray(x, np.float64)

def eval_grad_reference(x):
    return (np.full(np.shape(x), 0.5),)
