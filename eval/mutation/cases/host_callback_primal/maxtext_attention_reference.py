"""maxtext: the reference attention of the splash-attention kernel, made a custom_vjp by the call
form `jax.custom_vjp(_attention_reference, nondiff_argnums=(5, 6, 7, 8))` (the mask value, the
save-residuals flag, the backward variant and the logit soft cap, passed by keyword at the call
site); fwd saves (mask, q, k, v, segment_ids, o, logsumexp) and bwd, which takes the four
non-differentiable arguments first, recomputes the probabilities from the logsumexp and returns
`None, dq, dk, dv, None` (None for the boolean mask and the `SegmentIds` NamedTuple).

Adapted from AI-Hypercomputer/maxtext:src/maxtext/kernels/attention/splash_attention_kernel.py:311
(the `_attention_reference` -> `_attention_reference_default` delegation is folded into one
function; one head, as the kernel's reference is vmapped over heads by its caller).
"""
import functools
from functools import partial
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/host_callback_primal/maxtext_attention_reference', 'family': 'mutation', 'expect': 'unknown', 'library': 'maxtext', 'source': 'AI-Hypercomputer/maxtext:src/maxtext/kernels/attention/splash_attention_kernel.py:311', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'host_callback_primal', 'base': 'maxtext_attention_reference'}
DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.dtype('float32')).max)

class SegmentIds(NamedTuple):
    q: jax.Array
    kv: jax.Array

def _attention_reference(mask, q, k, v, segment_ids, mask_value, save_residuals, custom_type, attn_logits_soft_cap):
    """Reference attention implementation."""
    del custom_type
    logits = jnp.einsum('sd,td->st', q.astype(jnp.float32), k.astype(jnp.float32))
    if segment_ids is not None:
        mask = jnp.logical_and(mask, segment_ids.q[:, None] == segment_ids.kv[None, :])
    if attn_logits_soft_cap is not None:
        logits = jnp.tanh(logits / attn_logits_soft_cap)
        logits = logits * attn_logits_soft_cap
    logits = jnp.where(mask, logits, mask_value)
    m = logits.max(axis=-1)
    s = jnp.exp(logits - m[..., None])
    l = s.sum(axis=-1)
    s = s / l[..., None]
    o = jnp.einsum('st,td->sd', s, v.astype(jnp.float32))
    logsumexp = m + jnp.log(l)
    if save_residuals:
        return (o, (logsumexp,))
    _out = o
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)

def _attention_reference_custom_fwd(mask, q, k, v, segment_ids, mask_value, save_residuals, custom_type, attn_logits_soft_cap):
    if save_residuals:
        raise NotImplementedError('Higher-order AD not supported.')
    o, (logsumexp,) = _attention_reference(mask, q, k, v, segment_ids, mask_value=mask_value, save_residuals=True, custom_type=custom_type, attn_logits_soft_cap=attn_logits_soft_cap)
    return (o, (mask, q, k, v, segment_ids, o, logsumexp))

def _attention_reference_custom_bwd(mask_value, save_residuals, custom_type, attn_logits_soft_cap, res, do):
    del save_residuals
    mask, q, k, v, segment_ids, o, logsumexp = res
    uncapped_logits = jnp.einsum('qc,kc->qk', q, k, preferred_element_type=jnp.float32)
    if attn_logits_soft_cap is not None:
        logits = jnp.tanh(uncapped_logits / attn_logits_soft_cap)
        logits = logits * attn_logits_soft_cap
    else:
        logits = uncapped_logits
    if segment_ids is not None:
        mask = jnp.logical_and(mask, segment_ids.q[:, None] == segment_ids.kv[None, :])
    logits = jnp.where(mask, logits, mask_value)
    p = jnp.exp(logits - logsumexp[..., None])
    do = do.astype(jnp.float32)
    dv = jnp.einsum('pt,pd->td', p, do).astype(v.dtype)
    dp = jnp.einsum('pd,td->pt', do, v.astype(jnp.float32))
    if custom_type == 'flash':
        di = jnp.sum(o.astype(jnp.float32) * do, axis=-1)[..., None]
    else:
        di = jnp.einsum('st,st->s', dp, p)[:, None]
    ds = (dp - di) * p
    if attn_logits_soft_cap is not None:
        normalized = uncapped_logits / attn_logits_soft_cap
        d = jnp.tanh(normalized)
        g = ds * (1 - d)
        ds = g + g * d
    dk = jnp.einsum('sd,st->td', q.astype(jnp.float32), ds).astype(k.dtype)
    dq = jnp.einsum('st,td->sd', ds, k.astype(jnp.float32)).astype(q.dtype)
    return (None, dq, dk, dv, None)
_attention_reference_custom = jax.custom_vjp(_attention_reference, nondiff_argnums=(5, 6, 7, 8))
_attention_reference_custom.defvjp(_attention_reference_custom_fwd, _attention_reference_custom_bwd)

def attention_reference_custom(mask, q, k, v, segment_ids, *, mask_value=DEFAULT_MASK_VALUE, save_residuals=False, custom_type='flash', attn_logits_soft_cap=None):
    return _attention_reference_custom(mask, q, k, v, segment_ids, mask_value=mask_value, save_residuals=save_residuals, custom_type=custom_type, attn_logits_soft_cap=attn_logits_soft_cap)
_MASK = np.tril(np.ones((4, 4), dtype=bool))
_SEGMENTS = SegmentIds(q=np.array([0, 0, 1, 1], np.int32), kv=np.array([0, 0, 1, 1], np.int32))

def eval_fn(q, k, v):
    return attention_reference_custom(_MASK, q, k, v, _SEGMENTS, attn_logits_soft_cap=3.0)

def eval_inputs():
    rng = np.random.default_rng(7)
    q = rng.normal(size=(4, 3)).astype(np.float32)
    k = rng.normal(size=(4, 3)).astype(np.float32)
    v = rng.normal(size=(4, 3)).astype(np.float32)
    return (q, k, v)

def eval_reference(q, k, v):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    logits = 3.0 * np.tanh(q @ k.T / 3.0)
    mask = _MASK & (_SEGMENTS.q[:, None] == _SEGMENTS.kv[None, :])
    logits = np.where(mask, logits, -np.inf)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v
