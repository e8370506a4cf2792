"""Tokamax (the XLA reference implementation of dot-product attention): `_softmax(x, normalize)`,
a softmax over the last axis that also returns its statistics for the kernels' backward pass,
as `@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))` with the Python bool `normalize`
nondiff. The primal reduces in at least float32 (`jnp.promote_types(x.dtype, jnp.float32)`)
and returns the nested pair `(out, (x_max, denom))`: the normalised weights (or, with
`normalize=False`, the unnormalised `exp(x - x_max)`) and the two row statistics. The rule,
registered with the decorator `@_softmax.defjvp`, takes `normalize` first, unpacks
`(x,) = primals` and `(x_dot,) = tangents`, calls the custom function itself for the primal
output, and returns the softmax tangent `y * (x_dot - sum(y * x_dot))` (normalised) or
`y * (x_dot - mean of x_dot at the row maximum)` (unnormalised: the maximum's tangent), and
zeros for the statistics (`jax.tree.map(jnp.zeros_like, residual)`): they are residuals for a
backward kernel, never differentiated.

Adapted from openxla/tokamax:tokamax/_src/ops/attention/base.py:655 (commit 783ea95), with the
XLA attention of the same file (its `_fwd`, the call at :622: logits by `einsum`, scale, optional bias and tanh
soft cap, a mask written with the dtype's minimum, `weights, softmax_residuals = _softmax(logits,
normalize_output)`, the weighted sum of values). Changed: tokamax's `Op` class, quantised arrays,
precision presets, paging, dropout and grouped-query head repetition are dropped; the mask is a
causal boolean array. The caller runs the normalised attention with a soft cap and discards the
statistics, as the XLA path does unless residuals are requested.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvp_pair_wrapped/tokamax_softmax', 'family': 'mutation', 'expect': 'unknown', 'library': 'tokamax', 'source': 'openxla/tokamax:tokamax/_src/ops/attention/base.py:655', 'argnums': (0, 1, 2), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_pair_wrapped', 'base': 'tokamax_softmax'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _softmax(x, normalize):
    """Computes softmax, possibly using residual from the forward pass."""
    dtype = jnp.promote_types(x.dtype, jnp.float32)
    x_max = jnp.max(x.astype(dtype), axis=-1, keepdims=True)
    unnormalized = jnp.exp(x - x_max)
    denom = jnp.sum(unnormalized, axis=-1, keepdims=True)
    out = unnormalized / denom if normalize else unnormalized
    return (out, (jnp.squeeze(x_max, -1), jnp.squeeze(denom, -1)))

@_softmax.defjvp
def _softmax_jvp(normalize, primals, tangents):
    x, = primals
    x_dot, = tangents
    y, residual = _softmax(x, normalize)
    if normalize:
        y_dot = y * (x_dot - (y * x_dot).sum(axis=-1, keepdims=True))
    else:
        x_max = residual[0][..., None]
        x_dot_max_mean = jnp.mean(x_dot, axis=-1, keepdims=True, where=x == x_max)
        y_dot = y * (x_dot - x_dot_max_mean)
    return (((y, residual),), ((y_dot, jax.tree.map(jnp.zeros_like, residual)),))

def dot_product_attention(q, k, v, *, logits_scale, bias=None, logits_soft_cap=None, mask=None, normalize_output=True, return_residuals=False):
    logits = jnp.einsum('...qhd,...khd->...hqk', q, k)
    logits *= logits_scale
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    if logits_soft_cap is not None:
        logits = logits_soft_cap * jnp.tanh(logits / logits_soft_cap)
    if mask is not None:
        logits = jnp.where(mask, logits, float(jnp.finfo(logits.dtype).min))
    weights, softmax_residuals = _softmax(logits, normalize_output)
    out = jnp.einsum('...hqk,...khd->...qhd', weights, v).astype(q.dtype)
    return (out, softmax_residuals if return_residuals else None)
CAUSAL = np.tril(np.ones((3, 3), bool))
SOFT_CAP = 5.0

def eval_fn(q, k, v):
    out, _ = dot_product_attention(q, k, v, logits_scale=0.5, logits_soft_cap=SOFT_CAP, mask=CAUSAL)
    return out

def eval_inputs():
    rng = np.random.RandomState(8)
    q = rng.normal(size=(3, 2, 4)).astype(np.float32)
    k = rng.normal(size=(3, 2, 4)).astype(np.float32)
    v = rng.normal(size=(3, 2, 4)).astype(np.float32)
    return (q, k, v)

def eval_reference(q, k, v):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    logits = np.einsum('...qhd,...khd->...hqk', q, k) * 0.5
    logits = SOFT_CAP * np.tanh(logits / SOFT_CAP)
    logits = np.where(CAUSAL, logits, -np.inf)
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return np.einsum('...hqk,...khd->...qhd', w, v)
