"""flash-attention-jax: attention with hand-written fwd/bwd; the key mask gets None.

Adapted from lucidrains/flash-attention-jax:flash_attention_jax/flash_attention.py:91.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/flash_attention', 'family': 'mutation', 'expect': 'unknown', 'library': 'flash-attention-jax', 'source': 'lucidrains/flash-attention-jax:flash_attention_jax/flash_attention.py:91', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'flash_attention'}

def _attention(q, k, v, key_mask):
    s = q @ k.T / jnp.sqrt(q.shape[-1])
    s = jnp.where(key_mask[None, :], s, -1000000000.0)
    p = jax.nn.softmax(s, axis=-1)
    return (p @ v, p)

@jax.custom_vjp
def flash_attention(q, k, v, key_mask):
    out, _ = _attention(q, k, v, key_mask)
    return out

def flash_attention_forward(q, k, v, key_mask):
    out, p = _attention(q, k, v, key_mask)
    return (out, (q, k, v, key_mask, p))

def flash_attention_backward(do, res):
    q, k, v, key_mask, p = res
    scale = 1.0 / jnp.sqrt(q.shape[-1])
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - jnp.sum(dp * p, axis=-1, keepdims=True))
    dq = ds @ k * scale
    dk = ds.T @ q * scale
    return (dq, dk, dv, None)
flash_attention.defvjp(flash_attention_forward, flash_attention_backward)
MASK = np.array([True, True, False])

def eval_fn(q, k, v):
    return flash_attention(q, k, v, jnp.asarray(MASK)) * jnp.array([1.0, -2.0])

def eval_inputs():
    q = np.array([[0.5, 1.5], [-0.7, 0.2]], np.float32)
    k = np.array([[1.0, 0.5], [-0.3, 2.0], [0.4, -0.1]], np.float32)
    v = np.array([[0.2, -0.5], [1.3, 0.7], [-0.6, 0.9]], np.float32)
    return (q, k, v)

def eval_reference(q, k, v):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = np.where(MASK[None, :], s, -1000000000.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v * np.array([1.0, -2.0])
