"""NIFTy (`nifty.re`, the JAX rewrite): the symmetric positive-definite solve `_solve(A, X)` as a
bare module-level `@jax.custom_jvp` over two differentiated arrays. The primal solves by an
eigendecomposition, inverting only the eigenvalues above a cut (`jax.lax.select` on
`v > 1e-16`), for a vector or a matrix right-hand side (`X.ndim == 1` or `2`, asserted); the
rule, registered with the decorator `@_solve.defjvp`, unpacks both pairs in one statement,
`(A, X), (dA, dX) = primals, tangents`, and calls the custom function itself twice, for the
primal output and for the tangent `_solve(A, dX - dA @ res)` ("Makes use of `_solve` directly to
enable stable higher order derivatives"). The public `solve(A, B, *, matrix_eqn=False,
transposed=False)` maps it over the leaves of two pytrees (`tree_map`) and over leading batch
axes with `jnp.vectorize(_solve, signature=...)`.

Adapted from NIFTy-PPL/NIFTy:nifty/re/tree_math/util.py:15 (commit 53f62df), with the caller of
nifty/re/likelihood_impl.py:416 (`NDVariableCovarianceGaussian.energy`: `solve(prim_mat, rsdl)`,
`0.5 * vdot(rsdl, ...)` and `0.5 * slogdet` per leaf). Changed: the likelihood class is written
as a function; NIFTy's `vdot` over trees and the sum of log-determinants are kept per leaf
(the energy of each leaf, stacked); the covariance matrices are built in the caller from
per-leaf length scales (a squared-exponential kernel plus a nugget), as a forward model would,
so that every derivative goes through symmetric positive-definite matrices.
"""
import functools
import jax
from jax import numpy as jnp
from jax.tree_util import tree_map
import numpy as np
EVAL = {'id': 'mutation/jvp_tangent_atleast_1d/nifty_tree_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'nifty', 'source': 'NIFTy-PPL/NIFTy:nifty/re/tree_math/util.py:15', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_atleast_1d', 'base': 'nifty_tree_solve'}

def _check(v, cut=1e-16):
    return v > cut

@jax.custom_jvp
def _solve(A, X):
    assert A.ndim == 2
    assert X.ndim == 1 or X.ndim == 2
    v, U = jnp.linalg.eigh(A)
    vi = jax.lax.select(_check(v), 1.0 / v, jnp.zeros_like(v))
    res = U.T @ X
    res *= vi[:, jnp.newaxis] if X.ndim == 2 else vi
    return U @ res

@_solve.defjvp
def _solve_jvp(primals, tangents):
    (A, X), (dA, dX) = (primals, tangents)
    res = _solve(A, X)
    return (res, jnp.atleast_1d(_solve(A, dX - dA @ res)))

def solve(A, B, *, matrix_eqn=False, transposed=False):
    """Solves AX = B for X, A symmetric positive definite, mapped over the leaves of the trees
    and batched over leading axes."""
    sig = '(m,m),(m,n)->(m,n)' if matrix_eqn else '(m,m),(m)->(m)'
    solve_leaf = jnp.vectorize(_solve, signature=sig)
    if transposed:
        A = tree_map(jnp.matrix_transpose, A)
        B = tree_map(jnp.matrix_transpose, B)
    res = tree_map(solve_leaf, A, B)
    if transposed:
        res = tree_map(jnp.matrix_transpose, res)
    return res
GRID = np.array([0.0, 0.4, 1.1, 1.5], np.float32)
DATA = {'coarse': np.array([0.5, -0.2, 0.9, 0.3], np.float32), 'fine': np.array([-0.7, 0.4, 0.1, 1.2], np.float32)}
NUGGET = 0.3

def _kernel(scale):
    d = GRID[:, None] - GRID[None, :]
    return jnp.exp(-0.5 * d ** 2 / scale ** 2) + NUGGET * jnp.eye(GRID.shape[0])

def variable_covariance_energy(data, prim_mean, prim_mat):
    rsdl = tree_map(jnp.subtract, data, prim_mean)
    cov_inv_rsdl = solve(prim_mat, rsdl)
    term_rsdl = tree_map(lambda r, c: 0.5 * jnp.vdot(r, c), rsdl, cov_inv_rsdl)
    term_logdet = tree_map(lambda x: 0.5 * jnp.linalg.slogdet(x)[1], prim_mat)
    return tree_map(jnp.add, term_rsdl, term_logdet)

def eval_fn(mean, scales):
    prim_mean = {'coarse': mean[0], 'fine': mean[1]}
    prim_mat = {'coarse': _kernel(scales[0]), 'fine': _kernel(scales[1])}
    energy = variable_covariance_energy(DATA, prim_mean, prim_mat)
    return jnp.stack([energy['coarse'], energy['fine']])

def eval_inputs():
    mean = np.array([[0.1, 0.3, 0.6, -0.2], [-0.4, 0.2, 0.5, 0.8]], np.float32)
    scales = np.array([0.7, 0.45], np.float32)
    return (mean, scales)

def eval_reference(mean, scales):
    mean, scales = (np.asarray(mean, np.float64), np.asarray(scales, np.float64))
    grid = GRID.astype(np.float64)
    out = []
    for k, key in enumerate(('coarse', 'fine')):
        d = grid[:, None] - grid[None, :]
        cov = np.exp(-0.5 * d ** 2 / scales[k] ** 2) + NUGGET * np.eye(grid.shape[0])
        r = DATA[key].astype(np.float64) - mean[k]
        out.append(0.5 * r @ np.linalg.solve(cov, r) + 0.5 * np.linalg.slogdet(cov)[1])
    return np.array(out)
