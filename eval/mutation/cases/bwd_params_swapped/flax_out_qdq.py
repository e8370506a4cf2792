"""flax: an identity whose bwd fake-quantises the cotangent; two dtypes in nondiff_argnums.

Adapted from google/flax:flax/linen/fp8_ops.py:266.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/flax_out_qdq', 'family': 'mutation', 'expect': 'unknown', 'library': 'flax', 'source': 'google/flax:flax/linen/fp8_ops.py:266', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'flax_out_qdq'}

def quantize_dequantize(x, q_dtype, scale, compute_dtype):
    q = jnp.clip(x / scale, -448.0, 448.0).astype(q_dtype)
    return (q.astype(compute_dtype) * scale).astype(compute_dtype)

@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def out_qdq(compute_dtype, q_dtype, out, scale):
    return out

def out_qdq_fwd(compute_dtype, q_dtype, out, scale):
    return (out, scale)

def out_qdq_bwd(compute_dtype, q_dtype, g, res):
    scale = res
    q_g = quantize_dequantize(g, q_dtype, scale, compute_dtype)
    return (q_g, jnp.zeros_like(scale))
out_qdq.defvjp(out_qdq_fwd, out_qdq_bwd)

def eval_fn(x):
    return out_qdq(jnp.float32, jnp.bfloat16, x, jnp.float32(0.25)) * jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.asarray(x, np.float64) * np.array([1.0, 2.0, 3.0])
