"""brainstate: the embedding lookup of `brainstate.nn.Embedding`, a `@jax.custom_vjp` made inside
an `lru_cache`d factory `_embedding_lookup_fn(padding_idx, scale_grad_by_freq)` that closes over its
two options. fwd saves `(indices, weight.shape)` (a tuple of Python ints among the residuals); bwd
scatters the output cotangent back into a zero table with `.at[...].add`, divides it by each
index's frequency in the batch (`scale_grad_by_freq`) and masks the padding row, and returns
`(grad_weight, None)`: no cotangent for the integer indices. The scaling and the mask make the
rule deliberately not the lookup's derivative (`eval_grad_reference` gives the rule's gradient,
as PyTorch's `nn.Embedding` defines it).

Adapted from chaobrain/brainstate:brainstate/nn/_embedding.py:47 (commit e5eb83c): the factory and
its rules as the library spells them, without the `flat_idx.size == 0` early return; the caller is
the module's `update` (a lookup of a token batch), followed by a tanh read-out.
"""
from functools import lru_cache
from typing import Optional
import jax
import jax.numpy as jnp
import numpy as np
import functools
EVAL = {'id': 'mutation/nondiff_move/brainstate_embedding', 'family': 'mutation', 'expect': 'unknown', 'library': 'brainstate', 'source': 'chaobrain/brainstate:brainstate/nn/_embedding.py:47', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'nondiff_move', 'base': 'brainstate_embedding'}

@lru_cache(maxsize=None)
def _embedding_lookup_fn(padding_idx: Optional[int], scale_grad_by_freq: bool):
    """Return a lookup function with a custom VJP implementing embedding semantics."""

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def _lookup(weight, indices):
        indices = jnp.asarray(indices)
        return weight[indices]

    def _lookup_fwd(weight, indices):
        indices = jnp.asarray(indices)
        return (weight[indices], (indices, weight.shape))

    def _lookup_bwd(weight, residual, grad_output):
        indices, weight_shape = residual
        grad_output = jnp.asarray(grad_output)
        flat_idx = jnp.ravel(indices)
        flat_idx = jnp.asarray(flat_idx, dtype=jnp.int32)
        grad_flat = grad_output.reshape((flat_idx.shape[0],) + weight_shape[1:])
        if scale_grad_by_freq:
            counts = jnp.bincount(flat_idx, length=weight_shape[0])
            counts = counts.astype(grad_flat.dtype)
            counts = jnp.where(counts == 0, 1.0, counts)
            scale = counts[flat_idx]
            grad_flat = grad_flat / scale.reshape((flat_idx.shape[0],) + (1,) * (grad_flat.ndim - 1))
        if padding_idx is not None:
            pad_value = jnp.asarray(padding_idx, dtype=flat_idx.dtype)
            mask = flat_idx != pad_value
            broadcast_shape = (flat_idx.shape[0],) + (1,) * (grad_flat.ndim - 1)
            grad_flat = grad_flat * mask.reshape(broadcast_shape).astype(grad_flat.dtype)
        grad_weight = jnp.zeros(weight_shape, dtype=grad_output.dtype)
        grad_weight = grad_weight.at[flat_idx].add(grad_flat)
        return (None,)
    _lookup.defvjp(_lookup_fwd, _lookup_bwd)
    return _lookup
_READOUT = np.array([1.0, -0.5, 0.25], np.float32)

def eval_fn(weight, tokens):
    lookup = _embedding_lookup_fn(1, True)
    emb = lookup(weight, tokens)
    return jnp.tanh(emb) * _READOUT

def eval_inputs():
    weight = np.array([[0.3, -0.2, 0.5], [0.0, 0.0, 0.0], [0.7, 0.1, -0.4], [-0.6, 0.9, 0.2], [0.15, -0.8, 0.05]], np.float32)
    tokens = np.array([[0, 2, 2], [1, 3, 0]], np.int32)
    return (weight, tokens)

def eval_reference(weight, tokens):
    w = np.asarray(weight, np.float64)
    return np.tanh(w[np.asarray(tokens)]) * _READOUT

def eval_grad_reference(weight, tokens):
    w = np.asarray(weight, np.float64)
    idx = np.asarray(tokens).ravel()
    g_out = (1.0 - np.tanh(w[idx]) ** 2) * _READOUT
    counts = np.bincount(idx, minlength=w.shape[0]).astype(np.float64)
    counts[counts == 0] = 1.0
    g = np.zeros_like(w)
    for k, i in enumerate(idx):
        if i != 1:
            g[i] += g_out[k] / counts[i]
    return (g,)
