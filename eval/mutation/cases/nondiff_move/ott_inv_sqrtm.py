"""ott-jax: the inverse square root of a symmetric positive definite matrix with nondiff solver
settings; fwd returns the result as its own residual, bwd solves a Sylvester equation and returns a
1-tuple written without parentheses.

Adapted from ott-jax/ott:src/ott/math/matrix_square_root.py:282 (the Newton-Schulz iteration and
the Bartels-Stewart solver replaced by an eigendecomposition).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nondiff_move/ott_inv_sqrtm', 'family': 'mutation', 'expect': 'unknown', 'library': 'ott-jax', 'source': 'ott-jax/ott:src/ott/math/matrix_square_root.py:282', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'nondiff_move', 'base': 'ott_inv_sqrtm'}

def _inv_sqrtm(x, regularization):
    s, u = jnp.linalg.eigh(x + regularization * jnp.eye(x.shape[-1], dtype=x.dtype))
    return u * lax.rsqrt(s) @ u.T

def solve_sylvester_eig(y, c):
    """Z with y Z + Z y = c for symmetric positive definite y."""
    s, u = jnp.linalg.eigh(y)
    return u @ (u.T @ c @ u / (s[:, None] + s[None, :])) @ u.T

@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def inv_sqrtm_only(x, threshold=1e-06, regularization=0.0):
    return _inv_sqrtm(x, regularization)

def inv_sqrtm_only_fwd(x, threshold, regularization):
    inv_sqrt_x = _inv_sqrtm(x, regularization)
    return (inv_sqrt_x, inv_sqrt_x)

def inv_sqrtm_only_bwd(x, threshold, regularization, residual, cotangent):
    del threshold, regularization
    inv_sqrt_x = residual
    inv_x = jnp.matmul(inv_sqrt_x, inv_sqrt_x)
    vjp = -jnp.matmul(inv_x, jnp.matmul(solve_sylvester_eig(inv_sqrt_x, cotangent), inv_x))
    return ()
inv_sqrtm_only.defvjp(inv_sqrtm_only_fwd, inv_sqrtm_only_bwd)

def eval_fn(a):
    spd = a @ a.T + jnp.eye(3)
    return inv_sqrtm_only(spd, 1e-06, 0.0) @ jnp.array([1.0, 2.0, 3.0])

def eval_inputs():
    return (np.array([[0.5, 1.5, -0.7], [2.0, -1.0, 0.25], [0.3, 0.2, 1.1]], np.float32),)

def eval_reference(a):
    a = np.asarray(a, np.float64)
    s, u = np.linalg.eigh(a @ a.T + np.eye(3))
    return u / np.sqrt(s) @ u.T @ np.array([1.0, 2.0, 3.0])
