"""Varmint (Princeton LIPS, variational material design with isogeometric elements): the
differentiable static equilibrium solve. A solver class takes the structure's energy
`loss_fun(x, *args)` in its constructor and its method `get_optimize_fn()` defines and returns a
bare `@jax.custom_vjp` nested def `optimize(x0, args=())` (a defaulted second parameter holding a
*tuple* of arrays: fixed boundary locations, tractions, material parameters): Newton's method in a
`lax.while_loop` over a `namedtuple` state (`xk`, `g`, `inum`, `total_inum`) until the gradient's
norm is below `tol` or `max_iter` steps were taken. fwd `optimize_fwd(x0, args=())` calls the
custom function and saves `(xk, args)`; bwd `optimize_bwd(res, g)` unpacks `(xk, args) = res`,
solves the adjoint system with the Hessian at the equilibrium and takes `jax.vjp` of the energy's
gradient with respect to the whole `args` tuple, returning `None, args_bar` (no cotangent for the
initial guess: the equilibrium does not depend on it). The method registers the rule with
`optimize.defvjp(optimize_fwd, optimize_bwd)` and returns the custom function; the caller keeps it
(`optimize = solver.get_optimize_fn()`) and calls it with the initial guess interpolated between
the fixed ends (so `x0` is itself traced). The structure here is a chain of nonlinear springs
(quadratic plus quartic energy per spring) between two clamped ends under nodal loads; the
caller differentiates the equilibrium with respect to the clamp positions, the loads and the
spring stiffnesses.

Adapted from PrincetonLIPS/Varmint:varmint/solver/optimization.py:502 (`SparseNewtonSolverHCB.
get_optimize_fn`, the custom_vjp at :503; commit 0031b57), with the state `namedtuple` (:328)
and, for the adjoint's sign, varmint/solver/cholesky_solver.py:78 (`SparseCholeskyLinearSolver`,
whose `adjoint_op` pulls back `-adjoint` with `adjoint = H^-1 g`). Changed: the sparse Hessian
(HVPs against a coloring, reassembled into CSC and factored on the host through
`host_callback.call`) is the dense `jax.hessian` of the energy solved with `jnp.linalg.solve`, as
the library's `DenseNewtonSolver` (:1274) forms it; the `Geometry` object is left out. In
`SparseNewtonSolverHCB` the host solve returns `-H^-1 g` and the pullback is applied to its
negation, which gives the adjoint with the wrong sign; the base follows the Cholesky solver.
"""
from collections import namedtuple
import jax
import jax.numpy as np
import numpy as onp
EVAL = {'id': 'mutation/sequential_vmap_under_creator/varmint_newton_optimize', 'family': 'mutation', 'expect': 'unknown', 'library': 'varmint', 'source': 'PrincetonLIPS/Varmint:varmint/solver/optimization.py:503', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'sequential_vmap_under_creator', 'base': 'varmint_newton_optimize'}
NewtonSolverState = namedtuple('NewtonState', ['xk', 'g', 'inum', 'total_inum'])

class NewtonSolver:

    def __init__(self, loss_fun, max_iter=20, step_size=1.0, tol=1e-08):
        self.max_iter = max_iter
        self.step_size = step_size
        self.tol = tol
        self.loss_fun = loss_fun
        self.grad_fun = jax.grad(loss_fun)
        self.hessian_fun = jax.hessian(loss_fun)

    def get_optimize_fn(self):

        @jax.custom_vjp
        @jax.custom_batching.sequential_vmap
        def optimize(x0, args=()):
            tol = self.tol

            def cond_fun(state):
                return np.logical_and(np.linalg.norm(state.g) > tol, state.inum < self.max_iter)

            def body_fun(state):
                hess = self.hessian_fun(state.xk, *args)
                dx = np.linalg.solve(hess, -state.g)
                xk = state.xk + dx * self.step_size
                return NewtonSolverState(xk=xk, g=self.grad_fun(xk, *args), inum=state.inum + 1, total_inum=0)
            init_val = NewtonSolverState(xk=x0, g=self.grad_fun(x0, *args), inum=0, total_inum=0)
            final_state = jax.lax.while_loop(cond_fun, body_fun, init_val)
            return final_state.xk

        def optimize_fwd(x0, args=()):
            xk = optimize(x0, args)
            return (xk, (xk, args))

        def optimize_bwd(res, g):
            xk, args = res
            hess = self.hessian_fun(xk, *args)
            adjoint = np.linalg.solve(hess, g)

            def partial_grad(args):
                return self.grad_fun(xk, *args)
            _, f_pgrad = jax.vjp(partial_grad, args)
            args_bar = f_pgrad(-adjoint)[0]
            return (None, args_bar)
        optimize.defvjp(optimize_fwd, optimize_bwd)
        return optimize
REST_LENGTH = 0.2
QUARTIC = 10.0

def spring_chain_energy(x, fixed_locs, tractions, mat_params):
    """Nonlinear springs between consecutive nodes, clamped at both ends, under nodal loads."""
    nodes = np.concatenate([fixed_locs[:1], x, fixed_locs[1:]])
    strain = np.diff(nodes) - REST_LENGTH
    stored = mat_params * (0.5 * strain ** 2 + 0.25 * QUARTIC * strain ** 4)
    return np.sum(stored) - np.sum(tractions * x)
solver = NewtonSolver(spring_chain_energy)
optimize = solver.get_optimize_fn()

def eval_fn(fixed_locs, tractions, mat_params):
    n = tractions.shape[0]
    t = np.arange(1, n + 1) / (n + 1)
    x0 = fixed_locs[0] + t * (fixed_locs[1] - fixed_locs[0])
    return optimize(x0, (fixed_locs, tractions, mat_params))

def eval_inputs():
    rng = onp.random.RandomState(2)
    fixed_locs = onp.array([0.0, 1.3], onp.float32)
    tractions = (0.3 * rng.normal(size=5)).astype(onp.float32)
    mat_params = rng.uniform(1.0, 2.0, size=6).astype(onp.float32)
    return (fixed_locs, tractions, mat_params)

def eval_reference(fixed_locs, tractions, mat_params):
    a = onp.asarray(fixed_locs, onp.float64)
    f = onp.asarray(tractions, onp.float64)
    k = onp.asarray(mat_params, onp.float64)
    n = f.shape[0]
    x = a[0] + onp.arange(1, n + 1) / (n + 1) * (a[1] - a[0])
    for _ in range(60):
        e = onp.diff(onp.concatenate([a[:1], x, a[1:]])) - REST_LENGTH
        s = k * (e + QUARTIC * e ** 3)
        c = k * (1.0 + 3.0 * QUARTIC * e ** 2)
        grad = s[:-1] - s[1:] - f
        hess = onp.diag(c[:-1] + c[1:]) - onp.diag(c[1:-1], 1) - onp.diag(c[1:-1], -1)
        x = x - onp.linalg.solve(hess, grad)
    return x
