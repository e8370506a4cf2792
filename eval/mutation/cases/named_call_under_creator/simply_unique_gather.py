"""Simply (a JAX language-model codebase): `unique_gather(x, idx, inv_idx=None, empty_scatter=True)`,
the row gather that sorts a mixture-of-experts layer's tokens into expert order and back, as
`@partial(jax.custom_vjp, nondiff_argnames=("empty_scatter",))`: the nondiff option named (not
numbered), keyword-passed at the calls (`empty_scatter=False`), with a default; the optional
inverse permutation `inv_idx` defaults to `None` in a differentiated slot. The primal `del`s both
and returns `x[idx, ...]`. The forward rule takes all four parameters in order (the defaults
are filled in by JAX before it is called), calls the custom function with the option by keyword,
and saves `(x.shape, idx, inv_idx)` (a shape tuple of Python ints among the residuals); the
backward rule takes the option first, `(empty_scatter, res, g)`, and picks its cotangent by a
Python branch on static shapes: a permutation gathers `g` back with the inverse permutation
(`inv_idx`, or `jnp.argsort(idx)` when none was given); a gather of fewer rows scatters `g`
into `jax.lax.empty` (or zeros, with `empty_scatter=False`) with `.at[idx].set(g, mode="drop")`.
It returns `(grad, None, None)`: no cotangent for the integer indices. Registered with
`unique_gather.defvjp(unique_gather_fwd, unique_gather_bwd)`. The indices come in a
`jax.tree_util.register_dataclass` dataclass, `LocalPermuteMetadata`.

Adapted from google-deepmind/simply:simply/utils/moe_lib.py:166 (commit e14c061), with
`LocalPermuteMetadata` (:78) and `compute_local_permute_metadata` (:152) of the same file and
the layer's uses (:703 `unique_gather(y, sort_idx, inv_idx=isort_idx)`, :729
`unique_gather(y, isort_idx)`, :862 `unique_gather(x_sort, gather_idx, empty_scatter=False)`).
Changed: the ragged all-to-all across devices and the grouped matmul kernel are dropped; the
expert computation is a per-token `einsum` with the token's expert's weight matrix; the last
gather keeps a fixed subset of the tokens (a capacity cut) with `empty_scatter=False`, so that
no cotangent row is left uninitialised. The forward rule's parameter annotations are dropped
(mutate.py's `lambda` spelling keeps a one-line rule's parameters, and a lambda cannot carry
annotations); the primal's and the backward rule's are kept.
"""
from __future__ import annotations
import dataclasses
import functools
from functools import partial
from typing import Any
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/named_call_under_creator/simply_unique_gather', 'family': 'mutation', 'expect': 'unknown', 'library': 'simply', 'source': 'google-deepmind/simply:simply/utils/moe_lib.py:166', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'named_call_under_creator', 'base': 'simply_unique_gather'}

@jax.tree_util.register_dataclass
@dataclasses.dataclass
class LocalPermuteMetadata:
    group_idx: jax.Array
    group_counts: jax.Array
    sort_idx: jax.Array
    isort_idx: jax.Array

def compute_local_permute_metadata(group_idx: jax.Array, groups: int, group_counts: jax.Array | None=None):
    """Metadata for sorting tokens by their group (expert) index."""
    if group_counts is None:
        group_counts = jnp.bincount(group_idx, length=groups)
    sort_idx = jnp.argsort(group_idx)
    isort_idx = jnp.argsort(sort_idx)[:group_idx.shape[0]]
    return LocalPermuteMetadata(group_idx, group_counts, sort_idx, isort_idx)

@partial(jax.custom_vjp, nondiff_argnames=('empty_scatter',))
@jax.named_call
def unique_gather(x: jax.Array, idx: jax.Array, inv_idx: jax.Array | None=None, empty_scatter: bool=True):
    del empty_scatter, inv_idx
    return x[idx, ...]

def unique_gather_fwd(x, idx, inv_idx, empty_scatter):
    return (unique_gather(x, idx, inv_idx, empty_scatter=empty_scatter), (x.shape, idx, inv_idx))

def unique_gather_bwd(empty_scatter: bool, res: tuple[Any, jax.Array, jax.Array], g: jax.Array):
    x_shape, idx, inv_idx = res
    if g.shape[0] == x_shape[0]:
        inv_idx = inv_idx if inv_idx is not None else jnp.argsort(idx)
        grad = g[inv_idx, ...]
    elif g.shape[0] != x_shape[0] and inv_idx is not None:
        raise NotImplementedError('Gather with padding not yet implemented')
    else:
        _init = jax.lax.empty if empty_scatter else jnp.zeros
        grad = _init(x_shape, dtype=g.dtype).at[idx, ...].set(g, mode='drop')
    return (grad, None, None)
unique_gather.defvjp(unique_gather_fwd, unique_gather_bwd)
GROUP_IDX = np.array([2, 0, 1, 0, 2, 1], np.int32)
KEEP_IDX = np.array([0, 2, 3, 5], np.int32)

def moe_layer(x, expert_w):
    meta = compute_local_permute_metadata(jnp.asarray(GROUP_IDX), groups=expert_w.shape[0])
    y = unique_gather(x, meta.sort_idx, inv_idx=meta.isort_idx)
    experts = meta.group_idx[meta.sort_idx]
    y = jnp.tanh(jnp.einsum('nd,nde->ne', y, expert_w[experts]))
    y = unique_gather(y, meta.isort_idx)
    kept = unique_gather(y, jnp.asarray(KEEP_IDX), empty_scatter=False)
    return jnp.concatenate([y, kept], axis=0)

def eval_fn(x, expert_w):
    return moe_layer(x, expert_w)

def eval_inputs():
    rng = np.random.RandomState(3)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    expert_w = (0.6 * rng.normal(size=(3, 3, 3))).astype(np.float32)
    return (x, expert_w)

def eval_reference(x, expert_w):
    x, w = (np.asarray(x, np.float64), np.asarray(expert_w, np.float64))
    y = np.tanh(np.einsum('nd,nde->ne', x, w[GROUP_IDX]))
    return np.concatenate([y, y[KEEP_IDX]], axis=0)
