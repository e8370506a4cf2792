"""jax-md: a segment matmul whose bwd returns None for the integer segment sizes.

Adapted from jax-md/jax-md:jax_md/_nn/uma/kernels.py:1167.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/ct_order/jaxmd_segment_mm', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-md', 'source': 'jax-md/jax-md:jax_md/_nn/uma/kernels.py:1167', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'ct_order', 'base': 'jaxmd_segment_mm'}

def segment_mm_reference(x, weights, sizes):
    seg = jnp.repeat(jnp.arange(sizes.shape[0]), sizes, total_repeat_length=x.shape[0])
    return jnp.einsum('ni,nio->no', x, weights[seg])

@jax.custom_vjp
def _segment_mm_2d(x, weights, sizes):
    return segment_mm_reference(x, weights, sizes)

def _segment_mm_fwd(x, weights, sizes):
    y = segment_mm_reference(x, weights, sizes)
    return (y, (x, weights, sizes))

def _segment_mm_bwd(res, grad_y):
    x, weights, sizes = res
    seg = jnp.repeat(jnp.arange(sizes.shape[0]), sizes, total_repeat_length=x.shape[0])
    grad_x = jnp.einsum('no,nio->ni', grad_y, weights[seg])
    grad_weights = jnp.zeros_like(weights).at[seg].add(jnp.einsum('ni,no->nio', x, grad_y))
    return (grad_weights, grad_x, None)
_segment_mm_2d.defvjp(_segment_mm_fwd, _segment_mm_bwd)

def eval_fn(x, weights):
    return _segment_mm_2d(x, weights, jnp.array([1, 2])) * jnp.array([1.0, -2.0])

def eval_inputs():
    x = np.array([[0.5, 1.5], [-0.7, 0.2], [1.1, -0.4]], np.float32)
    w = np.array([[[1.0, 0.5], [-0.3, 2.0]], [[0.7, -1.2], [0.4, 0.9]]], np.float32)
    return (x, w)

def eval_reference(x, weights):
    x, w = (np.asarray(x, np.float64), np.asarray(weights, np.float64))
    seg = np.array([0, 1, 1])
    return np.einsum('ni,nio->no', x, w[seg]) * np.array([1.0, -2.0])
