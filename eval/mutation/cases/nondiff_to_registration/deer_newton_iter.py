"""DEER: `newton_iter`, Newton's method for `func(y, params) = 0` as
`@partial(jax.custom_jvp, nondiff_argnums=(0, 3, 4, 5, 6))` (the function and four solver options,
not contiguous: the differentiated `y0` and `params` sit in positions 1 and 2; the options have
defaults and the caller passes them by keyword), returning a NamedTuple `Result(value, success)`
whose `success` is a boolean; the rule, registered with the decorator `@newton_iter.defjvp`, takes
the five nondiff arguments first, ignores the tangent of `y0` (`_, grad_params = tangents`),
pushes the tangent of `params` through `func` with `jax.jvp` and solves with the converged
Jacobian (the implicit function theorem), and gives `success` a `float0` tangent.

Adapted from machine-discovery/deer:deer/froot.py:97 (the stored version): `newton_iter`,
`newton_iter_helper` (without the `return_full` branch and its scan) and the rule as the library
spells them; `Result` is defined here (`deer.utils`), the line search is left out (None), and the
rule's `float0` tangent is made with `numpy.zeros` (the library's `jnp.zeros_like(...,
dtype=float0)`). The caller solves a monotone elementwise system `y + 0.5 tanh(y) = params` and
weights the root.
"""
import functools
from functools import partial
from typing import Any, Callable, NamedTuple, Optional
import jax
import jax.numpy as jnp
import numpy as np

class Result(NamedTuple):
    value: Any
    success: Any
EVAL = {'id': 'mutation/nondiff_to_registration/deer_newton_iter', 'family': 'mutation', 'expect': 'unknown', 'library': 'deer', 'source': 'machine-discovery/deer:deer/froot.py:97', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_to_registration', 'base': 'deer_newton_iter'}

@jax.custom_jvp
def newton_iter(func: Callable[[jnp.ndarray, Any], jnp.ndarray], y0: jnp.ndarray, params: Any, max_iter: int=100, atol: float=1e-06, rtol: float=0.001, linesearch: Optional[Any]=None) -> Result:
    y, is_converged, _ = newton_iter_helper(func, y0, params, max_iter=max_iter, atol=atol, rtol=rtol, linesearch=linesearch)
    return Result(y, is_converged)

def newton_iter_helper(func, y0, params, max_iter=100, atol=1e-06, rtol=0.001, linesearch=None):

    def iter_func(carry):
        y, err, tol, iiter, _ = carry
        jac = jax.jacfwd(func)(y, params)
        fy = func(y, params)
        jacinvfy = jnp.linalg.solve(jac, fy)
        ynext = y - jacinvfy
        clip = 100000000.0
        ynext = jnp.clip(ynext, min=-clip, max=clip)
        ynext = jnp.where(jnp.isnan(ynext), 0.0, ynext)
        dy = ynext - y
        err = jnp.abs(dy)
        tol = atol + rtol * jnp.abs(ynext)
        return (ynext, err, tol, iiter + 1, jac)

    def cond_func(carry):
        _, err, tol, iiter, _ = carry
        return jnp.logical_and(jnp.any(err > tol), iiter < max_iter)
    err = jnp.full_like(y0, jnp.inf)
    tol = jnp.zeros_like(y0)
    iiter = jnp.array(0, dtype=jnp.int32)
    jac0 = jnp.zeros((y0.size, y0.size))
    y, err, tol, iiter, jac = jax.lax.while_loop(cond_func, iter_func, (y0, err, tol, iiter, jac0))
    is_converged = jnp.all(err <= tol)
    return (y, is_converged, jac)

@functools.partial(newton_iter.defjvp, nondiff_argnums=(0, 3, 4, 5, 6))
def newton_iter_jvp(func: Callable[[jnp.ndarray, Any], jnp.ndarray], max_iter: int, atol: float, rtol: float, linesearch: Optional[Any], primals, tangents):
    y0, params = primals
    _, grad_params = tangents
    yt, is_converged, jac = newton_iter_helper(func, y0, params, max_iter=max_iter, atol=atol, rtol=rtol, linesearch=linesearch)
    func_partial_y = partial(func, yt)
    _, grad_func = jax.jvp(func_partial_y, (params,), (grad_params,))
    grad_y = jnp.linalg.solve(jac, -grad_func)
    is_converged_tangent = np.zeros(np.shape(is_converged), dtype=jax.dtypes.float0)
    result = Result(yt, is_converged)
    grad_result = Result(grad_y, success=is_converged_tangent)
    return (result, grad_result)

def _residual(y, params):
    return y + 0.5 * jnp.tanh(y) - params

def eval_fn(y0, params):
    res = newton_iter(_residual, y0, params, max_iter=50, atol=1e-06, rtol=1e-05, linesearch=None)
    return res.value * jnp.array([1.0, -2.0, 0.5], jnp.float32)

def eval_inputs():
    return (np.array([0.0, 0.1, -0.1], np.float32), np.array([0.7, -0.4, 1.3], np.float32))

def eval_reference(y0, params):
    p = np.asarray(params, np.float64)
    y = np.zeros_like(p)
    for _ in range(60):
        y = y - (y + 0.5 * np.tanh(y) - p) / (1.0 + 0.5 / np.cosh(y) ** 2)
    return y * np.array([1.0, -2.0, 0.5]) + 0.0 * np.asarray(y0, np.float64)
