"""graphcast (weathernext utilities): `create_static_gather(indices, num_input_rows, ...)`, a
constructor that fixes the gather indices ahead of time and returns the op. When the number of
input rows is known it defines, inside its body, a bare `@jax.custom_vjp` `f(x, indices=None)` (the
runtime indices are optional and ignored: the compile-time ones are used), a fwd
`f_fwd(x, indices=None)` that calls `f` and saves the empty residual `()`, and a bwd `f_bwd(_, g)`
that scatters the cotangent back with a static segment sum (made by the sibling constructor
without its own custom VJP) and returns `None` for the optional indices; `f.defvjp(f_fwd, f_bwd)`
registers the rules and the constructor returns `f`.

Adapted from google-deepmind/graphcast:weathernext/utils/gather_scatter_ops.py:447 (commit 9c034db,
the gather at lines 335-458, the segment sum at 186-320). Changed: the sharded path (`shard_map`
over a global mesh), logging and the ahead-of-time sortedness check are left out; `jraph.segment_sum`
is `jax.ops.segment_sum`; `gather_with_fill` is written as `jnp.take(..., mode='fill')`. The
caller gathers node features onto edges (a mesh's senders, several edges per node), applies a
`tanh` edge update and weights each edge.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/checkpoint_under_creator/graphcast_static_gather', 'family': 'mutation', 'expect': 'unknown', 'library': 'graphcast', 'source': 'google-deepmind/graphcast:weathernext/utils/gather_scatter_ops.py:447', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'checkpoint_under_creator', 'base': 'graphcast_static_gather'}

def gather_with_fill(x, indices, indices_are_sorted=False):
    return jnp.take(x, indices, axis=0, mode='fill', fill_value=0, indices_are_sorted=indices_are_sorted)

def create_static_segment_sum(indices, num_output_rows, indices_are_sorted=False):
    """A segment sum over fixed indices (no custom VJP: JAX differentiates it)."""
    static_indices = np.asarray(indices)

    def segment_sum_fun(x, segment_ids=None, num_segments=None):
        del segment_ids, num_segments
        return jax.ops.segment_sum(x, jnp.array(static_indices), num_segments=num_output_rows, indices_are_sorted=indices_are_sorted)
    return segment_sum_fun

def create_static_gather(indices, num_input_rows=None, indices_are_sorted=False):
    """A gather with fixed indices whose backward pass is a static segment sum."""
    static_indices = np.asarray(indices)

    def gather_fun(x, indices=None):
        del indices
        inner_gather_fun = functools.partial(gather_with_fill, indices_are_sorted=indices_are_sorted)
        return inner_gather_fun(x, indices=jnp.array(static_indices))
    if num_input_rows is None:
        return gather_fun
    segment_sum_op = create_static_segment_sum(static_indices, num_output_rows=num_input_rows, indices_are_sorted=indices_are_sorted)

    @jax.custom_vjp
    @jax.checkpoint
    def f(x, indices=None):
        return gather_fun(x, indices)

    def f_fwd(x, indices=None):
        return (f(x, indices), ())

    def f_bwd(_, g):
        return (segment_sum_op(g), None)
    f.defvjp(f_fwd, f_bwd)
    return f
SENDERS = np.array([0, 0, 1, 2, 2, 2, 3], np.int32)

def eval_fn(node_features, edge_weights):
    gather = create_static_gather(SENDERS, num_input_rows=4, indices_are_sorted=True)
    edge_features = gather(node_features)
    return jnp.tanh(edge_features) * edge_weights[:, None]

def eval_inputs():
    return (np.array([[0.3, -0.7, 1.1], [0.9, 0.2, -0.4], [-1.2, 0.5, 0.8], [0.1, -0.3, 0.6]], np.float32), np.array([1.0, 0.5, -0.8, 1.5, 0.7, -0.2, 0.9], np.float32))

def eval_reference(node_features, edge_weights):
    x = np.asarray(node_features, np.float64)
    w = np.asarray(edge_weights, np.float64)
    return np.tanh(x[SENDERS]) * w[:, None]
