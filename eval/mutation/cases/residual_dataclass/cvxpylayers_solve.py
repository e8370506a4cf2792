"""cvxpylayers (JAX): the solver call of `CvxpyLayer._solve_with_custom_vjp`, a `@jax.custom_vjp`
defined inside a method on every call (closing over `self` and the call's `solver_args`), over
three problem-data arrays `(P_eval, q_eval, A_eval)`, returning the pair `(primal, dual)`; fwd
returns `(primal, dual), residuals`, bwd unpacks the pair cotangent `dprimal, ddual = g` and
returns the three data cotangents; registered with `solve_problem.defvjp(solve_problem_fwd,
solve_problem_bwd)` inside the method, which then calls it and recovers the results.

Adapted from cvxpy/cvxpylayers:src/cvxpylayers/jax/cvxpylayer.py:589 (commit f0b1c15). The library
hands the data to DIFFCP (a conic solver outside JAX) and keeps the solver's adjoint in a Python
dict closed over by fwd and bwd, returning empty residuals (the library notes this is not
jit-compatible); here the problem is an equality-constrained QP (min 1/2 x'Px + q'x, Ax = b, with
`A_eval = [A | b]`) solved from its KKT system with `jnp.linalg.solve`, and the adjoint's data
(P, A, primal, dual) travels as residuals instead of through the dict, so that jit and vmap trace
it. The backward is the KKT adjoint: w = K^-T (dprimal, ddual); dq = -w_x, db = w_nu,
dP = -w_x x', dA = -(w_nu x' + nu w_x'). `_recover_results` keeps the primal and the dual.
"""
import functools
import jax
import jax.numpy as jnp
import numpy
import dataclasses

@dataclasses.dataclass
class _Residuals:
    P_eval: jax.Array
    A_eval: jax.Array
    primal: jax.Array
    dual: jax.Array
EVAL = {'id': 'mutation/residual_dataclass/cvxpylayers_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'cvxpylayers', 'source': 'cvxpy/cvxpylayers:src/cvxpylayers/jax/cvxpylayer.py:589', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'residual_dataclass', 'base': 'cvxpylayers_solve'}

def _kkt(P_eval, A_eval, reg):
    n, m = (P_eval.shape[-1], A_eval.shape[-2])
    A = A_eval[..., :, :n]
    top = jnp.concatenate([P_eval + reg * jnp.eye(n, dtype=P_eval.dtype), A.T], axis=-1)
    bottom = jnp.concatenate([A, jnp.zeros((m, m), P_eval.dtype)], axis=-1)
    return jnp.concatenate([top, bottom], axis=-2)

def _recover_results(primal, dual, batch):
    if not batch:
        return (primal, dual)
    return (primal[None], dual[None])

class CvxpyLayer:

    def __init__(self, n_variables, n_constraints):
        self.n = n_variables
        self.m = n_constraints

    def __call__(self, P_eval, q_eval, A_eval, solver_args=None):
        solver_args = {'reg': 0.0} if solver_args is None else solver_args
        return self._solve_with_custom_vjp(P_eval, q_eval, A_eval, (), solver_args)

    def _solve_with_custom_vjp(self, P_eval, q_eval, A_eval, batch, solver_args):
        n = self.n

        @jax.custom_vjp
        def solve_problem(P_eval, q_eval, A_eval):
            rhs = jnp.concatenate([-q_eval, A_eval[:, n]])
            z = jnp.linalg.solve(_kkt(P_eval, A_eval, solver_args['reg']), rhs)
            primal, dual = (z[:n], z[n:])
            return (primal, dual)

        def solve_problem_fwd(P_eval, q_eval, A_eval):
            primal, dual = solve_problem(P_eval, q_eval, A_eval)
            return ((primal, dual), _Residuals(P_eval, A_eval, primal, dual))

        def solve_problem_bwd(res, g):
            dprimal, ddual = g
            P_eval, A_eval, primal, dual = (res.P_eval, res.A_eval, res.primal, res.dual)
            K = _kkt(P_eval, A_eval, solver_args['reg'])
            w = jnp.linalg.solve(K.T, jnp.concatenate([dprimal, ddual]))
            w_x, w_nu = (w[:n], w[n:])
            dP = -jnp.outer(w_x, primal)
            dq = -w_x
            dA = -(jnp.outer(w_nu, primal) + jnp.outer(dual, w_x))
            dA = jnp.concatenate([dA, w_nu[:, None]], axis=1)
            return (dP, dq, dA)
        solve_problem.defvjp(solve_problem_fwd, solve_problem_bwd)
        primal, dual = solve_problem(P_eval, q_eval, A_eval)
        return _recover_results(primal, dual, batch)

def eval_fn(P_eval, q_eval, A_eval):
    layer = CvxpyLayer(3, 1)
    x, nu = layer(P_eval, q_eval, A_eval)
    return jnp.concatenate([x * jnp.array([1.0, -0.5, 2.0], x.dtype), 0.7 * nu])

def eval_inputs():
    P = numpy.array([[2.0, 0.3, 0.1], [0.2, 1.5, -0.2], [0.1, -0.3, 1.8]], numpy.float32)
    q = numpy.array([0.4, -1.0, 0.3], numpy.float32)
    A = numpy.array([[1.0, 0.5, -0.8, 0.6]], numpy.float32)
    return (P, q, A)

def eval_reference(P_eval, q_eval, A_eval):
    P, q, Ab = (numpy.asarray(a, numpy.float64) for a in (P_eval, q_eval, A_eval))
    A, b = (Ab[:, :3], Ab[:, 3])
    K = numpy.block([[P, A.T], [A, numpy.zeros((1, 1))]])
    z = numpy.linalg.solve(K, numpy.concatenate([-q, b]))
    return numpy.concatenate([z[:3] * numpy.array([1.0, -0.5, 2.0]), 0.7 * z[3:]])
