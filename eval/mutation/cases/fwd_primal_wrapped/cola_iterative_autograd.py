"""cola: a decorator factory that gives an iterative solver a custom_vjp built on every call: the
`@custom_vjp` function, its fwd and bwd are defined inside the wrapper, take the operator's
flattened parameters (a list) and close over the solver's other arguments; the bwd returns a
1-tuple holding a list of the same type as the parameters.

Adapted from wilson-labs/cola:cola/utils/custom_autodiff.py:74 (the jax branch only; the linear
operator is a dense matrix whose `flatten` gives `([A], unflatten)`; the iterative solver is
`jnp.linalg.solve` and its backward, as cola's inverse's, is dA = -(A^-T g) x^T). The right-hand
side b is a constant of the caller (`static`): the bwd closes over the solver's other arguments,
so a traced b would reach the bwd from another trace (JAX 0.10.2 raises under grad(jit(...))).
"""
import functools
from functools import partial, wraps
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp, lax
EVAL = {'id': 'mutation/fwd_primal_wrapped/cola_iterative_autograd', 'family': 'mutation', 'expect': 'unknown', 'library': 'cola', 'source': 'wilson-labs/cola:cola/utils/custom_autodiff.py:74', 'argnums': (0,), 'static': (1,), 'extra': ['grad_jit'], 'operator': 'fwd_primal_wrapped', 'base': 'cola_iterative_autograd'}

def flatten(A):
    return ([A], lambda params: params[0])

def iterative_autograd(iterative_bwd):

    def wrap_iterative(iterative_fn):

        @wraps(iterative_fn)
        def iterative_w_A_arg(A, *args, **kwargs):
            par, unflatten = flatten(A)

            def fwd(params):
                A = unflatten(params)
                output = iterative_fn(A, *args, **kwargs)
                res = (params, output)
                return ((output,), res)

            def bwd(res, d_ouputs):
                dA, *_ = iterative_bwd(res, d_ouputs, unflatten, *args, **kwargs)
                return (type(par)(flatten(dA)[0]),)

            @custom_vjp
            def iterative(params):
                return fwd(params)[0]
            iterative.defvjp(fwd, bwd)
            return iterative(par)
        return iterative_w_A_arg
    return wrap_iterative

def solve_bwd(res, grads, unflatten, *args, **kwargs):
    params, x = res
    A = unflatten(params)
    lam = jnp.linalg.solve(A.T, grads)
    return (-jnp.outer(lam, x),)

@iterative_autograd(solve_bwd)
def solve(A, b):
    return jnp.linalg.solve(A, b)

def eval_fn(A, b):
    return solve(A, b)

def eval_inputs():
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
    b = np.array([1.0, -2.0, 0.5], np.float32)
    return (A, b)

def eval_reference(A, b):
    return np.linalg.solve(np.asarray(A, np.float64), np.asarray(b, np.float64))
