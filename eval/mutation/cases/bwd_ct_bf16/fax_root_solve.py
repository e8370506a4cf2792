"""fax (fixed points and implicit differentiation for JAX, C. Gehring): `root_solve(func, init_xs,
params, solver, rev_solver=None)`, a `@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 3,
4))` function whose nondiff arguments are callables -- the parametric residual `func(x, params)`,
the forward `solver(init_xs, params)` and an optional matrix-free linear `rev_solver` -- and whose
differentiable arguments are pytrees (here `params` is a dict). The primal deletes what it does not
use, stops the gradient of its inputs with `jax.tree_util.tree_map(jax.lax.stop_gradient, ...)` and
calls the solver; fwd `root_solve_fwd(func, init_xs, params, solver, rev_solver)` saves
`(sol, params)`; the reverse rule `root_solve_rev(func, solver, rev_solver, res, sol_bar)` (the
three nondiff arguments first, in order) solves the adjoint system `J_x^T v = sol_bar` with
GMRES (defaulting `rev_solver` to `jax.scipy.sparse.linalg.gmres` when it is None) through
`jax.vjp` of the residual, and returns the pair `(tree_map(zeros_like, sol), -J_p^T v)`: a zero
cotangent for the initial guess and the implicit-function-theorem cotangent for the parameters.

Adapted from gehring/fax:fax/implicit/root.py:10 (commit 62fba38). Changed: the deprecated
`jax.tree_map` is spelled `jax.tree_util.tree_map`; `numpy` is imported as `jnp` (the library
imports `jax.numpy as np`). The caller solves the nonlinear spring system
`K x + x**3 = f` by ten Newton steps (`lax.fori_loop`, the Jacobian from `jax.jacfwd`) from a
zero guess and differentiates the solution with respect to the stiffness `K` and the load `f`.
"""
import functools
import operator
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.sparse import linalg
EVAL = {'id': 'mutation/bwd_ct_bf16/fax_root_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'fax', 'source': 'gehring/fax:fax/implicit/root.py:10', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'bwd_ct_bf16', 'base': 'fax_root_solve'}

@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 3, 4))
def root_solve(func, init_xs, params, solver, rev_solver=None):
    """A differentiable implicit function for the root of `func(x, params) = 0`."""
    del func, rev_solver
    init_xs = jax.tree_util.tree_map(jax.lax.stop_gradient, init_xs)
    params = jax.tree_util.tree_map(jax.lax.stop_gradient, params)
    return solver(init_xs, params)

def root_solve_fwd(func, init_xs, params, solver, rev_solver):
    sol = root_solve(func, init_xs, params, solver, rev_solver)
    return (sol, (sol, params))

def root_solve_rev(func, solver, rev_solver, res, sol_bar):
    del solver
    sol, params = res
    if rev_solver is None:
        rev_solver = linalg.gmres
    _, dsol_vjp = jax.vjp(lambda x: func(x, params), sol)
    dsol, _ = rev_solver(jax.jit(lambda v: dsol_vjp(v)[0]), sol_bar)
    _, dparam_vjp = jax.vjp(lambda p: func(sol, p), params)
    dparam = jax.tree_util.tree_map(operator.neg, dparam_vjp(dsol)[0])
    return (jnp.asarray(jax.tree_util.tree_map(jnp.zeros_like, sol), jnp.bfloat16), dparam)
root_solve.defvjp(root_solve_fwd, root_solve_rev)

def spring_residual(x, params):
    return params['stiffness'] @ x + x ** 3 - params['load']

def newton_solver(init_xs, params):

    def step(_, x):
        jac = jax.jacfwd(spring_residual)(x, params)
        return x - jnp.linalg.solve(jac, spring_residual(x, params))
    return jax.lax.fori_loop(0, 10, step, init_xs)

def eval_fn(stiffness, load):
    params = {'stiffness': stiffness, 'load': load}
    return root_solve(spring_residual, jnp.zeros_like(load), params, newton_solver, None)

def eval_inputs():
    return (np.array([[3.0, -1.0, 0.0], [-1.0, 3.0, -1.0], [0.0, -1.0, 3.0]], np.float32), np.array([1.0, 0.5, -0.8], np.float32))

def eval_reference(stiffness, load):
    k = np.asarray(stiffness, np.float64)
    f = np.asarray(load, np.float64)
    x = np.zeros_like(f)
    for _ in range(50):
        x = x - np.linalg.solve(k + np.diag(3 * x ** 2), k @ x + x ** 3 - f)
    return x
