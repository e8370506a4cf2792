"""Scenic (computer-vision research library, Google Research): the decorator factory
`cpu_matcher(matching_fn)` that makes a host matching function (the Hungarian algorithm of SciPy)
callable from jitted code. Inside the factory, a `@jax.custom_vjp` function
`matching_fn_hcb(cost, n_cols=None)` (a parameter with a default) calls the host through
`jax.pure_callback(..., vmap_method='broadcast_all')` and returns integer indices, shape
`[..., 2, min(n, m)]`; fwd `matching_fn_hcb_vjp_fwd(cost, n_cols)` (no default) calls the custom
function and saves `None`; bwd `matching_fn_hcb_vjp_bwd(*_)` takes everything as star-args and
returns `(None, None)`: no gradient through a matching. The factory is applied as a decorator,
`@cpu_matcher def hungarian_matcher(cost)`. The caller is a DETR-style set loss: the matching
chooses which predictions pay for which targets, and the gradient flows through the gathered
costs only.

Adapted from google-research/scenic:scenic/model_lib/matchers/common.py:99 (commit 4a38d47),
with `slicer` (:22) of the same file and `hungarian_matcher` of
scenic/model_lib/matchers/hungarian.py:22. Changed: `slicer` keeps only the path without padding
(`n_present_col is None`); the caller (after `DetrBaseModel`'s loss, which gathers a matching
cost by the matched indices) uses squared distances between predicted and target points as the
cost, without class terms.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize as sciopt
import jax.profiler
EVAL = {'id': 'mutation/annotate_over_creator/scenic_cpu_matcher', 'family': 'mutation', 'expect': 'unknown', 'library': 'scenic', 'source': 'google-research/scenic:scenic/model_lib/matchers/common.py:99', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'annotate_over_creator', 'base': 'scenic_cpu_matcher'}

def slicer(cost, n_present_col, matching_fn):
    """Maps matching_fn over the examples of a batch of cost matrices."""
    batch_shape = cost.shape[:-2]
    cost = cost.reshape(-1, *cost.shape[-2:])
    assert n_present_col is None, 'padding removal is not kept here'
    matches = np.stack([matching_fn(c) for c in cost])
    return matches.reshape(*batch_shape, *matches.shape[1:])

def cpu_matcher(matching_fn):
    """Wraps a host matching function so that it can be called under `jit`."""

    def slice_and_match(args):
        cost, ncol = args
        return slicer(cost, ncol, matching_fn)

    @jax.profiler.annotate_function
    @jax.custom_vjp
    def matching_fn_hcb(cost, n_cols=None):
        *b, n, m = cost.shape
        return jax.pure_callback(slice_and_match, jax.ShapeDtypeStruct(b + [2, min(n, m)], jnp.int32), (cost, n_cols), vmap_method='broadcast_all')

    def matching_fn_hcb_vjp_fwd(cost, n_cols):
        return (matching_fn_hcb(cost, n_cols), None)

    def matching_fn_hcb_vjp_bwd(*_):
        return (None, None)
    matching_fn_hcb.defvjp(matching_fn_hcb_vjp_fwd, matching_fn_hcb_vjp_bwd)
    return matching_fn_hcb

@cpu_matcher
def hungarian_matcher(cost):
    """Hungarian matching of one cost matrix [N, M]: [2, min(N, M)] (row, column) pairs."""
    col_ind, row_ind = sciopt.linear_sum_assignment(cost.T)
    return np.stack([row_ind, col_ind]).astype(np.int32)
TARGETS = np.array([[0.2, 0.8], [0.7, 0.3], [0.5, 0.5]], np.float32)

def eval_fn(pred_points):
    cost = jnp.sum((pred_points[:, None, :] - TARGETS[None, :, :]) ** 2, axis=-1)
    matches = hungarian_matcher(cost)
    rows, cols = (matches[0], matches[1])
    return cost[rows, cols]

def eval_inputs():
    pred = np.array([[0.1, 0.9], [0.9, 0.1], [0.45, 0.6], [0.3, 0.2], [0.8, 0.8]], np.float32)
    return (pred,)

def eval_reference(pred_points):
    pred = np.asarray(pred_points, np.float64)
    cost = np.sum((pred[:, None, :] - TARGETS[None, :, :].astype(np.float64)) ** 2, axis=-1)
    col, row = sciopt.linear_sum_assignment(cost.T)
    return cost[row, col]
