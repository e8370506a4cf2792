"""JAX FDM: the linear solve of the force density method, a `@jax.custom_vjp` over the
(symmetric) stiffness matrix and a right-hand side with one column per coordinate, registered
with `defvjp` further down the module, after other helpers (as the library does). fwd calls the
custom function itself and saves `(xk, A, b)`; bwd solves the adjoint system with the same custom solve (no
transpose: A is symmetric) and returns the cotangent tuple that `jax.vjp` of the implicit
residual `b - A @ xk` gives for `(A, b)`: the return value is a call's result, not a tuple
written out.

Adapted from arpastrana/jax_fdm:src/jax_fdm/equilibrium/sparse.py:207 (`sparse_solve`,
`sparse_solve_fwd`, `sparse_solve_bwd`; the CSC matrix and the registered CPU/GPU sparse
solvers are replaced by a dense matrix and `jnp.linalg.solve`, and the caller is a small
cable net: A = C_free^T diag(q) C_free, b = p - C_free^T diag(q) C_fixed x_fixed).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/fwd_pair_swapped/jaxfdm_sparse_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax_fdm', 'source': 'arpastrana/jax_fdm:src/jax_fdm/equilibrium/sparse.py:207', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'fwd_pair_swapped', 'base': 'jaxfdm_sparse_solve'}

def spsolve(A, b):
    return jnp.linalg.solve(A, b)

@jax.custom_vjp
def sparse_solve(A, b):
    """Solve A x = b (A symmetric) with a custom backward pass."""
    return spsolve(A, b)

def sparse_solve_fwd(A, b):
    xk = sparse_solve(A, b)
    return ((xk, A, b), xk)

def sparse_solve_bwd(res, g):
    """Implicit differentiation through the linear system, not through the solver."""
    xk, A, b = res
    lam = sparse_solve(A, g)

    def residual_fn(params):
        A, b = params
        return b - A @ xk
    params = (A, b)
    params_bar = jax.vjp(residual_fn, params)[1](lam)[0]
    return params_bar
EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (1, 5), (2, 6), (3, 7)]
FREE, FIXED = ([0, 1, 2, 3], [4, 5, 6, 7])
X_FIXED = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.2], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.3]], np.float32)

def connectivity():
    C = np.zeros((len(EDGES), 8), np.float32)
    for e, (i, j) in enumerate(EDGES):
        C[e, i], C[e, j] = (1.0, -1.0)
    return (C[:, FREE], C[:, FIXED])
sparse_solve.defvjp(sparse_solve_fwd, sparse_solve_bwd)

def eval_fn(q, loads):
    c_free, c_fixed = connectivity()
    A = c_free.T @ (q[:, None] * c_free)
    b = loads - c_free.T @ (q[:, None] * (c_fixed @ X_FIXED))
    return sparse_solve(A, b)

def eval_inputs():
    q = np.array([1.2, 0.8, 1.5, 1.0, 2.0, 1.7, 2.2, 1.4], np.float32)
    loads = np.array([[0.0, 0.1, -0.5], [0.05, 0.0, -0.4], [0.0, -0.1, -0.6], [-0.05, 0.0, -0.3]], np.float32)
    return (q, loads)

def eval_reference(q, loads):
    c_free, c_fixed = (m.astype(np.float64) for m in connectivity())
    q = np.asarray(q, np.float64)
    A = c_free.T @ (q[:, None] * c_free)
    b = np.asarray(loads, np.float64) - c_free.T @ (q[:, None] * (c_fixed @ X_FIXED.astype(np.float64)))
    return np.linalg.solve(A, b)
