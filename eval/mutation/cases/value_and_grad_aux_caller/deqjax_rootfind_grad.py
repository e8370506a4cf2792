"""deq-jax (Deep Equilibrium Models in JAX/Haiku): the implicit backward pass of a DEQ layer,
`rootfind_grad(fun, max_iter, params, rng, x, *args)`, as `@partial(jax.custom_vjp,
nondiff_argnums=(0, 1))` over a variadic primal: the equilibrium function `g` (a closure made per
call by `deq`) and the iteration budget are nondiff, `params` is a dict of arrays, `rng` a PRNG key
and `*args` the layer's extra inputs. The primal solves `g(z) = 0` by Broyden's method under
`stop_gradient`; the forward rule registered for it (`dumb_fwd`) returns its input `x` unchanged
and saves `(params, rng, x, *args)`; the backward rule (`rootfind_bwd`) takes the two nondiff
arguments first, then `res, grad`, unpacks `(params, rng, z_star, *args) = res`, pulls back
through `jax.vjp(fun, params, rng, z_star, *args)` (discarding all but the `z` cotangent), solves
`J_g^T y + grad = 0` by Broyden's method and returns `(None, None, dl_df_est, *arg_grads)` with a
`None` per extra argument. Registered with `rootfind_grad.defvjp(dumb_fwd, rootfind_bwd)`. `deq`
calls a plain solve, applies the layer once more (to re-engage autodiff) and passes the result
through `rootfind_grad`, so the gradient is the implicit-function one.

Adapted from akbir/deq-jax:src/modules/rootfind.py:49 (commit 02c0fe3) and src/modules/deq.py (same
commit). Changed: the library's first custom_vjp, `rootfind` (the same solve with a straight-through
`dumb_bwd`), is a plain function here whose result is under `stop_gradient` (its initial guess is a
constant, so the straight-through cotangent reaches nothing); its Broyden solver
(src/modules/broyden.py, a low-rank update with `jax.ops.index_update`, removed from JAX) is written
anew as a dense good-Broyden update in a `lax.while_loop` keeping the best iterate, as the library's
does; `dumb_fwd`'s parameter annotations are dropped (mutate.py's `lambda` spelling turns a
one-line rule into a lambda and cannot carry them: a SyntaxError in the tool). The layer is a
small tanh cell `tanh(W z + U x + b)` with Haiku-style `(params, rng, z, x)`.
"""
import functools
from functools import partial
from typing import Callable
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/value_and_grad_aux_caller/deqjax_rootfind_grad', 'family': 'mutation', 'expect': 'unknown', 'library': 'deq-jax', 'source': 'akbir/deq-jax:src/modules/rootfind.py:49', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'value_and_grad_aux_caller', 'base': 'deqjax_rootfind_grad'}

def broyden(g: Callable, x0: jnp.ndarray, max_iter: int, eps: float, *args) -> dict:
    """Root of g(x, *args) by good Broyden (inverse Jacobian, initially -I), keeping the best iterate."""
    shape = x0.shape

    def g_flat(x):
        return g(x.reshape(shape), *args).reshape(-1)
    x = x0.reshape(-1)
    gx = g_flat(x)
    objective = jnp.linalg.norm(gx)
    state = (0, x, gx, -jnp.eye(x.size, dtype=x.dtype), x, objective)

    def cond_fun(state):
        n_step, _, gx, _, _, min_objective = state
        return (min_objective >= eps) & (n_step < max_iter)

    def body_fun(state):
        n_step, x, gx, inv_jacobian, min_x, min_objective = state
        dx = -inv_jacobian @ gx
        x_new = x + dx
        gx_new = g_flat(x_new)
        delta_gx = gx_new - gx
        u = inv_jacobian @ delta_gx
        update = jnp.outer(dx - u, dx @ inv_jacobian) / (dx @ u)
        inv_jacobian = inv_jacobian + jnp.nan_to_num(update)
        new_objective = jnp.linalg.norm(gx_new)
        min_found = new_objective < min_objective
        return (n_step + 1, x_new, gx_new, inv_jacobian, jnp.where(min_found, x_new, min_x), jnp.where(min_found, new_objective, min_objective))
    state = jax.lax.while_loop(cond_fun, body_fun, state)
    return {'result': state[4].reshape(shape), 'n_step': state[0]}

def rootfind(fun: Callable, max_iter: int, params: dict, rng: jnp.ndarray, x: jnp.ndarray, *args):
    eps = 1e-06 * jnp.sqrt(x.size)
    fun = partial(fun, params, rng)
    result_info = jax.lax.stop_gradient(broyden(fun, x, max_iter, eps, *args))
    return result_info['result']

def rootfind_bwd(fun, max_iter, res, grad):
    params, rng, z_star, *args = res
    _, vjp_fun = jax.vjp(fun, params, rng, z_star, *args)

    def h_fun(x):
        JTp, JTr, JTx, *_ = vjp_fun(x)
        return JTx + grad
    eps = 2e-10 * jnp.sqrt(grad.size)
    dl_df_est = jnp.zeros_like(grad)
    result_info = broyden(h_fun, dl_df_est, max_iter, eps)
    dl_df_est = result_info['result']
    arg_grads = tuple([None for _ in args])
    return_tuple = (None, None, dl_df_est, *arg_grads)
    return return_tuple

@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def rootfind_grad(fun: Callable, max_iter: int, params: dict, rng, x: jnp.ndarray, *args):
    eps = 1e-06 * jnp.sqrt(x.size)
    fun = partial(fun, params, rng)
    result_info = jax.lax.stop_gradient(broyden(fun, x, max_iter, eps, *args))
    return result_info['result']

def dumb_fwd(fun, max_iter, params, rng, x, *args):
    return (x, (params, rng, x, *args))
rootfind_grad.defvjp(dumb_fwd, rootfind_bwd)

def deq(params: dict, rng, x: jnp.ndarray, fun: Callable, max_iter: int, *args) -> jnp.ndarray:

    def g(_params, _rng, _x, *args):
        return fun(_params, _rng, _x, *args) - _x
    z = rootfind(g, max_iter, params, rng, x, *args)
    z = fun(params, rng, z, *args)
    z = rootfind_grad(g, max_iter, params, rng, z, *args)
    return z

def cell(params, rng, z, x):
    del rng
    return jnp.tanh(params['W'] @ z + params['U'] @ x + params['b'])
B = numpy.array([0.1, -0.2, 0.05, 0.3], numpy.float32)

def eval_fn(w, u, x):
    params = {'W': w, 'U': u, 'b': jnp.asarray(B)}
    z0 = jnp.zeros(4, jnp.float32)
    return deq(params, jax.random.PRNGKey(0), z0, cell, 30, x)

def eval_inputs():
    w = numpy.array([[0.2, -0.1, 0.15, 0.0], [0.05, 0.25, -0.1, 0.1], [-0.15, 0.1, 0.2, -0.05], [0.1, 0.0, -0.2, 0.3]], numpy.float32)
    u = numpy.array([[0.8, -0.3], [0.2, 0.6], [-0.5, 0.4], [0.3, 0.9]], numpy.float32)
    x = numpy.array([0.7, -1.1], numpy.float32)
    return (w, u, x)

def eval_reference(w, u, x):
    w, u, x = (numpy.asarray(a, numpy.float64) for a in (w, u, x))
    z = numpy.zeros(4)
    for _ in range(200):
        z = numpy.tanh(w @ z + u @ x + B.astype(numpy.float64))
    return z

def value_and_grad_aux_usage(*args):

    def loss_aux(*a):
        out = eval_fn(*a)
        return (jnp.sum(out), out)
    (value, out), g = jax.value_and_grad(loss_aux, argnums=(0, 1, 2), has_aux=True)(*args)
    return tuple(g) + (value,)

def value_and_grad_aux_usage_expected(*args):
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1, 2))(*args)
    return tuple(g) + (jnp.sum(eval_fn(*args)),)

def eval_custom():
    args = tuple(eval_inputs())
    return {'value_and_grad_aux_usage': lambda: (value_and_grad_aux_usage(*args), value_and_grad_aux_usage_expected(*args))}
