"""ringattention: blockwise attention as a custom_vjp made with
`partial(jax.custom_vjp, nondiff_argnums=[4, 5])`; the fwd takes every argument in the primal's
order and keeps the softmax statistics (denominator, running maximum) and the output as residuals,
the bwd takes the two static arguments first and returns no cotangent (None) for the bias.

Adapted from haoliuhl/ringattention:ringattention/ringattention_jax.py:92 (one device, one block:
the ring's `lax.scan` over `ppermute`d key/value blocks, the segment ids, the cache index and the
axis name are dropped; `_blockwise_attention_fwd/bwd` are written inline with `jnp.einsum`).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/hessian_caller/ringattention_attention', 'family': 'mutation', 'expect': 'unknown', 'library': 'ringattention', 'source': 'haoliuhl/ringattention:ringattention/ringattention_jax.py:92', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'hessian_caller', 'base': 'ringattention_attention'}

def _ring_attention_fwd(q, k, v, attn_bias, float32_logits, blockwise_kwargs):
    if float32_logits:
        q, k = (q.astype(jnp.float32), k.astype(jnp.float32))
    scale = blockwise_kwargs['scale']
    scores = jnp.einsum('bqhd,bkhd->bhqk', q, k) * scale + attn_bias
    max_score = jnp.max(scores, axis=-1)
    weights = jnp.exp(scores - max_score[..., None])
    denominator = jnp.sum(weights, axis=-1)
    numerator = jnp.einsum('bhqk,bkhd->bqhd', weights, v)
    output = numerator / jnp.transpose(denominator, (0, 2, 1))[..., None]
    return (output.astype(v.dtype), (output, q, k, v, attn_bias, denominator, max_score))

def _ring_attention_bwd(float32_logits, blockwise_kwargs, res, g):
    del float32_logits
    output, q, k, v, attn_bias, denominator, max_score = res
    scale = blockwise_kwargs['scale']
    scores = jnp.einsum('bqhd,bkhd->bhqk', q, k) * scale + attn_bias
    p = jnp.exp(scores - max_score[..., None]) / denominator[..., None]
    dv = jnp.einsum('bhqk,bqhd->bkhd', p, g)
    dp = jnp.einsum('bqhd,bkhd->bhqk', g, v)
    dp_sum = jnp.einsum('bqhd,bqhd->bhq', g, output)
    ds = p * (dp - dp_sum[..., None])
    dq = jnp.einsum('bhqk,bkhd->bqhd', ds, k) * scale
    dk = jnp.einsum('bhqk,bqhd->bkhd', ds, q) * scale
    dq, dk, dv = (dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(k.dtype))
    return (dq, dk, dv, None)

@partial(jax.custom_vjp, nondiff_argnums=[4, 5])
def ring_attention(q, k, v, attn_bias, float32_logits, blockwise_kwargs):
    y, _ = _ring_attention_fwd(q, k, v, attn_bias, float32_logits, blockwise_kwargs)
    return y
ring_attention.defvjp(_ring_attention_fwd, _ring_attention_bwd)

def eval_fn(q, k, v, attn_bias):
    return ring_attention(q, k, v, attn_bias, True, {'scale': 0.5, 'query_chunk_size': 3, 'key_chunk_size': 4})

def eval_inputs():
    q = np.array([0.5, -0.25, 1.0, 0.75, -0.5, 0.3], np.float32).reshape(1, 3, 1, 2)
    k = np.array([0.2, 0.9, -0.7, 0.4, 1.1, -0.3, 0.05, 0.6], np.float32).reshape(1, 4, 1, 2)
    v = np.array([1.0, -1.0, 0.5, 2.0, -0.25, 0.8, 1.5, 0.1], np.float32).reshape(1, 4, 1, 2)
    bias = np.array([0.0, -0.5, 0.25, 0.0, 0.1, 0.0, -1.0, 0.3, 0.0, 0.2, 0.0, -0.2], np.float32).reshape(1, 1, 3, 4)
    return (q, k, v, bias)

def eval_reference(q, k, v, attn_bias):
    q, k, v, b = (np.asarray(a, np.float64) for a in (q, k, v, attn_bias))
    s = np.einsum('bqhd,bkhd->bhqk', q, k) * 0.5 + b
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return np.einsum('bhqk,bkhd->bqhd', w, v)

def hessian_usage(*args):
    return jax.hessian(lambda *a: jnp.sum(eval_fn(*a)), argnums=0)(*args)

def eval_custom():
    return {'hessian_usage': lambda: (hessian_usage(*eval_inputs()), None)[1]}
