"""jax-fem: the solution of a (nonlinear) discrete problem as a function of its parameters, a
custom_vjp made in the factory `ad_wrapper(problem, ...)` and closing over a stateful `problem`
(`problem.set_params` is called in the primal); the solution is a list of fields, fwd saves
(params, sol_list) and bwd returns a 1-tuple from the adjoint method (`implicit_vjp`: solve
A^T lambda = v, then minus the VJP of the constraint in the parameters).

Adapted from deepmodeling/jax-fem:jax_fem/solver.py:1437 (at 912632b5; the finite-element
`Problem`, PETSc solvers, Dirichlet handling and logging are replaced by a small chain of nonlinear
springs, K u + theta * u**3 = f, solved by a fixed number of dense Newton steps; `implicit_vjp`
keeps the library's structure of constraint_fn / get_vjp_contraint_fn_params).
"""
import functools
from functools import partial
import jax
import jax.flatten_util
import jax.numpy as np
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/hessian_caller/jaxfem_ad_wrapper', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-fem', 'source': 'deepmodeling/jax-fem:jax_fem/solver.py:1437', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'hessian_caller', 'base': 'jaxfem_ad_wrapper'}
_N = 5
_K = 2.0 * onp.eye(_N) - onp.eye(_N, k=1) - onp.eye(_N, k=-1) + 0.5 * onp.eye(_N)
_F = onp.array([0.4, -0.2, 0.7, 0.1, -0.5])

class SpringProblem:
    """Nodes of a chain of springs: one field of shape (num_nodes, 1)."""

    def __init__(self):
        self.params = None

    def set_params(self, params):
        self.params = params

    def compute_residual(self, sol_list):
        u = sol_list[0][:, 0]
        res = np.asarray(_K, u.dtype) @ u + self.params * u ** 3 - np.asarray(_F, u.dtype)
        return [res[:, None]]

    def unflatten_fn_sol_list(self, dofs):
        return [dofs.reshape(_N, 1)]

def solver(problem, solver_options={}):
    dofs = np.zeros(_N, dtype=np.result_type(problem.params))

    def res_fn(dofs):
        return jax.flatten_util.ravel_pytree(problem.compute_residual(problem.unflatten_fn_sol_list(dofs)))[0]
    for _ in range(solver_options.get('newton_steps', 12)):
        dofs = dofs - np.linalg.solve(jax.jacfwd(res_fn)(dofs), res_fn(dofs))
    return problem.unflatten_fn_sol_list(dofs)

def implicit_vjp(problem, sol_list, params, v_list, adjoint_solver_options):

    def constraint_fn(dofs, params):
        """c(u, p)"""
        problem.set_params(params)
        return jax.flatten_util.ravel_pytree(problem.compute_residual(problem.unflatten_fn_sol_list(dofs)))[0]

    def constraint_fn_sol_to_sol(sol_list, params):
        dofs = jax.flatten_util.ravel_pytree(sol_list)[0]
        con_vec = constraint_fn(dofs, params)
        return problem.unflatten_fn_sol_list(con_vec)

    def get_partial_params_c_fn(sol_list):
        """c(u=u, p)"""

        def partial_params_c_fn(params):
            return constraint_fn_sol_to_sol(sol_list, params)
        return partial_params_c_fn

    def get_vjp_contraint_fn_params(params, sol_list):
        """v*(partial dc/dp)"""
        partial_c_fn = get_partial_params_c_fn(sol_list)

        def vjp_linear_fn(v_list):
            primals_output, f_vjp = jax.vjp(partial_c_fn, params)
            val, = f_vjp(v_list)
            return val
        return vjp_linear_fn
    dofs = jax.flatten_util.ravel_pytree(sol_list)[0]
    A = jax.jacfwd(lambda d: constraint_fn(d, params))(dofs)
    v_vec = jax.flatten_util.ravel_pytree(v_list)[0]
    adjoint_vec = np.linalg.solve(A.T, v_vec)
    vjp_linear_fn = get_vjp_contraint_fn_params(params, sol_list)
    vjp_result = vjp_linear_fn(problem.unflatten_fn_sol_list(adjoint_vec))
    vjp_result = jax.tree_util.tree_map(lambda x: -x, vjp_result)
    return vjp_result

def ad_wrapper(problem, solver_options={}, adjoint_solver_options={}):

    @jax.custom_vjp
    def fwd_pred(params):
        problem.set_params(params)
        sol_list = solver(problem, solver_options)
        return sol_list

    def f_fwd(params):
        sol_list = fwd_pred(params)
        return (sol_list, (params, sol_list))

    def f_bwd(res, v):
        params, sol_list = res
        vjp_result = implicit_vjp(problem, sol_list, params, v, adjoint_solver_options)
        return (vjp_result,)
    fwd_pred.defvjp(f_fwd, f_bwd)
    return fwd_pred
_problem = SpringProblem()

def eval_fn(theta):
    fwd_pred = ad_wrapper(_problem)
    sol_list = fwd_pred(theta)
    return sol_list[0][:, 0]

def eval_inputs():
    return (onp.array([1.0, 0.5, 2.0, 1.5, 0.8], onp.float32),)

def eval_reference(theta):
    theta = onp.asarray(theta, onp.float64)
    u = onp.zeros(_N)
    for _ in range(30):
        r = _K @ u + theta * u ** 3 - _F
        u = u - onp.linalg.solve(_K + onp.diag(3.0 * theta * u ** 2), r)
    return u

def hessian_usage(*args):
    return jax.hessian(lambda *a: jnp.sum(eval_fn(*a)), argnums=0)(*args)

def eval_custom():
    return {'hessian_usage': lambda: (hessian_usage(*eval_inputs()), None)[1]}
