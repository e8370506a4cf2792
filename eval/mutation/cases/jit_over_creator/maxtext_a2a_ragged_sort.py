"""maxtext: sorting the valid prefix of a padded token buffer by a permutation, through a
`@jax.custom_vjp` defined anew inside the function that applies it (its fwd and bwd decorated
with `@jax.named_scope`, the primal returning `fwd(...)[0]`); fwd keeps
`(sort_indices, end, inputs.shape)` as residuals, and bwd scatters the cotangent back along the
inverse permutation, masked to the valid rows, returning None for the integer permutation and
the integer `valid_end`.

Adapted from AI-Hypercomputer/maxtext:src/maxtext/kernels/ragged/ragged_sort.py:493
(`a2a_ragged_sort`; the SparseCore `ragged_gather` / `ragged_gather_reduce` kernels are
replaced by their gather-and-mask meaning in jax.numpy).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jit_over_creator/maxtext_a2a_ragged_sort', 'family': 'mutation', 'expect': 'unknown', 'library': 'maxtext', 'source': 'AI-Hypercomputer/maxtext:src/maxtext/kernels/ragged/ragged_sort.py:493', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'jit_over_creator', 'base': 'maxtext_a2a_ragged_sort'}

def ragged_gather(inputs, indices, starts, ends, use_single_sparsecore=False):
    """out[i] = inputs[indices[i]] for rows i in [starts[0], ends[0]); zero elsewhere."""
    del use_single_sparsecore
    rows = jnp.arange(indices.shape[0])
    valid = (rows >= starts[0]) & (rows < ends[0])
    return jnp.where(valid[:, None], inputs[indices], 0.0)

def ragged_gather_reduce(inputs, indices, topk_weights, valid_rows_mask, reduce_group_size=1, enforce_fallback=False, use_single_sparsecore=False):
    """out[j] = sum over the group of topk_weights * inputs[indices[...]] for valid rows."""
    del enforce_fallback, use_single_sparsecore
    gathered = inputs[indices] * topk_weights[:, None].astype(inputs.dtype)
    gathered = jnp.where(valid_rows_mask[:, None], gathered, 0.0)
    return gathered.reshape((-1, reduce_group_size) + inputs.shape[1:]).sum(axis=1)

def a2a_ragged_sort(inputs, sort_indices, valid_end, enforce_gather_fallback=False, enforce_gather_reduce_fallback=False, use_single_sparsecore=False):
    """Sort the rows of `inputs` in its valid prefix [0, valid_end) by `sort_indices`; other rows are 0."""

    @jax.jit
    @jax.custom_vjp
    def _a2a_ragged_sort(inputs, sort_indices, valid_end):
        return _a2a_ragged_sort_fwd(inputs, sort_indices, valid_end)[0]

    @jax.named_scope('local-ragged-sort-fwd')
    def _a2a_ragged_sort_fwd(inputs, sort_indices, valid_end):
        start = jnp.int32(0)
        end = valid_end.astype(jnp.int32) if hasattr(valid_end, 'astype') else jnp.int32(valid_end)
        out = ragged_gather(inputs, sort_indices, start[None], end[None], use_single_sparsecore=use_single_sparsecore)
        n = sort_indices.shape[0]
        valid_mask = jnp.arange(n) < end
        out = jnp.where(valid_mask[:, None], out, 0.0)
        res = (sort_indices, end, inputs.shape)
        return (out, res)

    @jax.named_scope('local-ragged-sort-bwd')
    def _a2a_ragged_sort_bwd(res, g_out):
        sort_indices, end, _ = res
        n = sort_indices.shape[0]
        valid_rows_mask = jnp.arange(n) < end
        idx_inv = jnp.argsort(sort_indices)
        grad_inputs = ragged_gather_reduce(g_out, idx_inv, topk_weights=jnp.ones((n,), dtype=jnp.float32), valid_rows_mask=valid_rows_mask[idx_inv], reduce_group_size=1, enforce_fallback=enforce_gather_reduce_fallback, use_single_sparsecore=use_single_sparsecore)
        return (grad_inputs, None, None)
    _a2a_ragged_sort.defvjp(_a2a_ragged_sort_fwd, _a2a_ragged_sort_bwd)
    return _a2a_ragged_sort(inputs, sort_indices, valid_end)
_SCALE = np.linspace(-1.0, 1.5, 5 * 2, dtype=np.float32).reshape(5, 2)

def eval_fn(inputs, sort_indices, valid_end):
    out = a2a_ragged_sort(inputs, sort_indices, valid_end)
    return jnp.sin(out) * _SCALE

def eval_inputs():
    inputs = np.array([[0.3, -0.2], [1.1, 0.4], [-0.7, 0.9], [0.25, -1.3], [0.6, 0.05]], np.float32)
    sort_indices = np.array([3, 0, 4, 1, 2], np.int32)
    return (inputs, sort_indices, np.int32(3))

def eval_reference(inputs, sort_indices, valid_end):
    inputs = np.asarray(inputs, np.float64)
    out = inputs[np.asarray(sort_indices)]
    out[int(valid_end):] = 0.0
    return np.sin(out) * _SCALE.astype(np.float64)
