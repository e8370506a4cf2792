"""jaxley: the solve of a tree-structured (dendritic Hines) linear system A x = b, built inside a
factory that closes over the tree's edge order; the inner function is a decorated
`@jax.custom_jvp` whose rule, registered with the decorator `@_solve.defjvp` inside the same
factory, returns (x, A^{-1}(db - dA x)): the tangent is one more solve with the same matrix, and
JAX derives the reverse mode by transposing it (the solve is a `fori_loop` over the edges).

Adapted from jaxleyverse/jaxley:jaxley/solver_voltage.py:93 (`_make_dhs_solve`; the level-grouped
GPU variant and the padding of edge levels are dropped: the edges are eliminated one at a time,
leaves first, then back-substituted from the root).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax.lax import fori_loop
EVAL = {'id': 'mutation/nondiff_move/jaxley_dhs_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxley', 'source': 'jaxleyverse/jaxley:jaxley/solver_voltage.py:93', 'argnums': (0, 1, 2, 3), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'jaxley_dhs_solve'}
_PARENTS = np.array([-1, 0, 0, 1, 1, 2], np.int32)

def _triang_step(i, carry):
    diags, solves, lowers, uppers, edges = carry
    child, parent = (edges[i, 0], edges[i, 1])
    multiplier = uppers[child] / diags[child]
    diags = diags.at[parent].add(-multiplier * lowers[child])
    solves = solves.at[parent].add(-multiplier * solves[child])
    return (diags, solves, lowers, uppers, edges)

def _backsub_step(i, carry):
    solves, lowers, edges = carry
    child, parent = (edges[i, 0], edges[i, 1])
    solves = solves.at[child].add(-lowers[child] * solves[parent])
    return (solves, lowers, edges)

def _make_dhs_solve(parents):
    """Create a solve function with custom JVP for efficient differentiation."""
    all_children = np.nonzero(parents >= 0)[0].astype(np.int32)
    all_parents = parents[all_children]
    ordered_edges = np.stack([all_children, all_parents], axis=1)
    flipped_edges = ordered_edges[::-1].copy()
    steps = len(ordered_edges)

    def _raw_solve(diags, lowers, uppers, solves):
        """Solve the tree-structured linear system (no custom JVP)."""
        init = (diags, solves, lowers, uppers, flipped_edges)
        diags_out, solves_out, _, _, _ = fori_loop(0, steps, _triang_step, init)
        lowers_norm = lowers / diags_out
        solves_norm = solves_out / diags_out
        solves_out, _, _ = fori_loop(0, steps, _backsub_step, (solves_norm, lowers_norm, ordered_edges))
        return solves_out

    @functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
    def _solve(diags, lowers, uppers, solves):
        return _raw_solve(diags, lowers, uppers, solves)

    @_solve.defjvp
    def _solve_jvp(solves, primals, tangents):
        diags, lowers, uppers = primals
        d_diags, d_lowers, d_uppers = tangents
        d_solves = jnp.zeros_like(solves)
        x = _raw_solve(diags, lowers, uppers, solves)
        dA_x = d_diags * x
        dA_x = dA_x.at[all_parents].add(d_uppers[all_children] * x[all_children])
        dA_x = dA_x.at[all_children].add(d_lowers[all_children] * x[all_parents])
        new_rhs = d_solves - dA_x
        dx = _raw_solve(diags, lowers, uppers, new_rhs)
        return (x, dx)
    return _solve
_dhs_solve = _make_dhs_solve(_PARENTS)

def eval_fn(diags, lowers, uppers, solves):
    return _dhs_solve(diags, lowers, uppers, solves)

def eval_inputs():
    diags = np.array([4.0, 3.5, 5.0, 3.0, 4.5, 3.8], np.float32)
    lowers = np.array([0.0, -0.8, -1.1, -0.6, -0.9, -1.3], np.float32)
    uppers = np.array([0.0, -0.7, -1.2, -0.5, -1.0, -0.4], np.float32)
    solves = np.array([1.0, -0.5, 0.8, 2.0, -1.5, 0.3], np.float32)
    return (diags, lowers, uppers, solves)

def eval_reference(diags, lowers, uppers, solves):
    a = np.diag(np.asarray(diags, np.float64))
    for child, parent in enumerate(_PARENTS):
        if parent >= 0:
            a[parent, child] = float(uppers[child])
            a[child, parent] = float(lowers[child])
    return np.linalg.solve(a, np.asarray(solves, np.float64))
