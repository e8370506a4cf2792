"""jaxopt: a fixed-point solver made a custom_vjp in a factory; bwd by the implicit function theorem.

Adapted from google/jaxopt:jaxopt/_src/implicit_diff.py:204.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/jaxopt_fixed_point_implicit', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxopt', 'source': 'google/jaxopt:jaxopt/_src/implicit_diff.py:204', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'jaxopt_fixed_point_implicit'}

def make_solver(num_iter):

    @jax.custom_vjp
    def solver_fun(theta):
        return lax.fori_loop(0, num_iter, lambda i, x: 0.5 * jnp.cos(x) + theta, jnp.zeros_like(theta))

    def solver_fun_fwd(theta):
        sol = solver_fun(theta)
        return (sol, (sol, theta))

    def solver_fun_bwd(cotangent, res):
        sol, theta = res
        return (cotangent / (1.0 + 0.5 * jnp.sin(sol)),)
    solver_fun.defvjp(solver_fun_fwd, solver_fun_bwd)
    return solver_fun
_solve = make_solver(60)

def eval_fn(theta):
    return _solve(theta)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(theta):
    theta = np.asarray(theta, np.float64)
    x = np.zeros_like(theta)
    for _ in range(200):
        x = 0.5 * np.cos(x) + theta
    return x
