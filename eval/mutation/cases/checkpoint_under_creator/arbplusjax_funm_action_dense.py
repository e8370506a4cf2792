"""arbPlusJAX (interval and ball arithmetic linear algebra in JAX): the action f(A) x of a dense
matrix function, with a custom VJP defined *inside* the public function: `@jax.custom_vjp` on a
local `_apply(a_inner, x_inner)` that closes over the caller's `dense_funm` (a callable) and
`steps` (an int checked in the primal), local `_apply_fwd` / `_apply_bwd`, the registration
`_apply.defvjp(_apply_fwd, _apply_bwd)` and the call `return _apply(a, x)`, all in the body of
`jcb_mat_funm_action_arnoldi_dense_point(a, x, dense_funm, steps)`. fwd saves the pair
`(a_mid, x_mid)`; bwd returns `(a_grad, x_grad)`: the x cotangent exactly,
`f(A)^T c`, and the matrix cotangent by central differences of `dense_funm` along every basis
matrix E_ij, built in two Python loops with `.at[i, j].set(...)`.

Adapted from philipjones77/arbPlusJAX:src/arbplusjax/jcb_mat.py:3340 (commit dc51dec), whose
rule is at :3346. Changed: the complex-box version is made real (the library's imaginary-step
second difference and complex conjugates dropped; its box midpoints are plain arrays); the
`checks.check` assertions are Python `ValueError`s; the difference step is 1e-3 instead of 1e-6
(float32 here). The caller applies the matrix exponential (`jax.scipy.linalg.expm`, the dense
function a user passes) with `steps=3` and differentiates in the matrix and the vector.
"""
import functools
import jax
import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np
import scipy.linalg
EVAL = {'id': 'mutation/checkpoint_under_creator/arbplusjax_funm_action_dense', 'family': 'mutation', 'expect': 'unknown', 'library': 'arbplusjax', 'source': 'philipjones77/arbPlusJAX:src/arbplusjax/jcb_mat.py:3340', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'checkpoint_under_creator', 'base': 'arbplusjax_funm_action_dense'}

def _dense_funm_action_point(a, x, dense_funm):
    return dense_funm(a) @ x

def jcb_mat_funm_action_arnoldi_dense_point(a, x, dense_funm, steps):

    @jax.custom_vjp
    @jax.checkpoint
    def _apply(a_inner, x_inner):
        if steps <= 0:
            raise ValueError('jcb_mat.funm_action_arnoldi_dense.steps')
        if steps > a_inner.shape[-2]:
            raise ValueError('jcb_mat.funm_action_arnoldi_dense.steps_dim')
        return _dense_funm_action_point(a_inner, x_inner, dense_funm)

    def _apply_fwd(a_inner, x_inner):
        y = _dense_funm_action_point(a_inner, x_inner, dense_funm)
        return (y, (a_inner, x_inner))

    def _apply_bwd(res, cotangent):
        a_mid, x_mid = res
        funm_mid = dense_funm(a_mid)
        x_grad = funm_mid.T @ cotangent
        n = int(a_mid.shape[-1])
        eps = 0.001
        a_grad = jnp.zeros_like(a_mid)
        for i in range(n):
            for j in range(n):
                basis = jnp.zeros_like(a_mid).at[i, j].set(1.0)
                dy = (dense_funm(a_mid + eps * basis) - dense_funm(a_mid - eps * basis)) / (2.0 * eps) @ x_mid
                a_grad = a_grad.at[i, j].set(jnp.vdot(cotangent, dy))
        return (a_grad, x_grad)
    _apply.defvjp(_apply_fwd, _apply_bwd)
    return _apply(a, x)

def eval_fn(a, x):
    return jcb_mat_funm_action_arnoldi_dense_point(a, x, jax.scipy.linalg.expm, 3)

def eval_inputs():
    a = np.array([[0.2, -0.1, 0.05], [0.3, -0.25, 0.1], [0.0, 0.15, 0.1]], np.float32)
    x = np.array([1.0, -0.5, 0.25], np.float32)
    return (a, x)

def eval_reference(a, x):
    a = np.asarray(a, np.float64)
    x = np.asarray(x, np.float64)
    if a.ndim == 3:
        return np.stack([scipy.linalg.expm(m) @ v for m, v in zip(a, x)])
    return scipy.linalg.expm(a) @ x
