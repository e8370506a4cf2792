"""tensorcircuit: a thin SVD whose gradient stays finite for (near-)degenerate singular values,
a `@jax.custom_vjp` returning the tuple `(u, s, v)`; fwd calls the custom function itself and
saves its three outputs as the residuals, and bwd takes the three output cotangents as one tuple
`(du, ds, dv)` and returns the 1-tuple `(grad_a,)`: the terms of arXiv:1909.02659 with a
regularised reciprocal `x / (x^2 + eps)` in place of 1 / (s_j^2 - s_i^2), plus a Python branch
on the static shapes for tall (m > n) and wide (m < n) matrices. The library exports
`jax.jit(adaware_svd)`, which the usage here calls.

Adapted from tensorcircuit/tensorcircuit-ng:tensorcircuit/backends/jax_ops.py:18
(`adaware_svd`, `jaxsvd_fwd`, `jaxsvd_bwd`; the intermediate names and the grouping of the
terms are rewritten, the formula is the library's).
"""
import functools
from functools import partial
from typing import Any, Sequence, Tuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/residual_dict/tensorcircuit_adaware_svd', 'family': 'mutation', 'expect': 'unknown', 'library': 'tensorcircuit', 'source': 'tensorcircuit/tensorcircuit-ng:tensorcircuit/backends/jax_ops.py:18', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'residual_dict', 'base': 'tensorcircuit_adaware_svd'}
Array = Any

@jax.custom_vjp
def adaware_svd(A: Array) -> Any:
    u, s, v = jnp.linalg.svd(A, full_matrices=False)
    return (u, s, v)

def _safe_reciprocal(x: Array, epsilon: float=1e-15) -> Array:
    return x / (x * x + epsilon)

def jaxsvd_fwd(A: Array) -> Any:
    u, s, v = adaware_svd(A)
    return ((u, s, v), {'u': u, 's': s, 'v': v})

def jaxsvd_bwd(r: Sequence[Array], tangents: Sequence[Array]) -> Tuple[Array]:
    u, s, v = (r['u'], r['s'], r['v'])
    du, ds, dv = tangents
    v = jnp.conj(v.T)
    dv = jnp.conj(dv.T)
    m = u.shape[-2]
    n = v.shape[-2]
    gap = s * s - (s * s)[:, None]
    F = _safe_reciprocal(gap) - jnp.diag(jnp.diag(_safe_reciprocal(gap)))
    S = jnp.diag(s)
    Sinv = jnp.diag(_safe_reciprocal(s))
    term_s = jnp.conj(u) @ jnp.diag(ds) @ v.T
    J = F * (u.T @ du)
    term_u = jnp.conj(u) @ (J + jnp.conj(J).T) @ S @ v.T
    K = F * (v.T @ dv)
    term_v = jnp.conj(u) @ S @ (K + jnp.conj(K).T) @ v.T
    L = jnp.diag(jnp.diag(v.T @ dv)) @ Sinv
    term_c = 0.5 * jnp.conj(u) @ (jnp.conj(L) - L) @ v.T
    grad_a = term_v + term_u + term_s + term_c
    if m > n:
        grad_a += (du - jnp.conj(u) @ u.T @ du) @ Sinv @ v.T
    elif m < n:
        grad_a += jnp.conj(u) @ Sinv @ jnp.conj(dv).T @ (jnp.eye(n) - jnp.conj(v) @ v.T)
    return (grad_a,)
adaware_svd.defvjp(jaxsvd_fwd, jaxsvd_bwd)
adaware_svd_jit = jax.jit(adaware_svd)
_WS = np.array([1.0, -0.7, 0.4], np.float32)
_WU = np.array([[0.5, -1.0, 0.3], [1.2, 0.2, -0.4], [-0.6, 0.8, 1.1], [0.9, -0.3, 0.25], [0.1, 0.7, -0.9]], np.float32)
_WV = np.array([[0.4, 1.3, -0.2], [-0.8, 0.6, 0.5], [1.0, -0.45, 0.35]], np.float32)

def eval_fn(a):
    u, s, vh = adaware_svd_jit(a)
    return jnp.stack([jnp.sum(s * _WS), jnp.sum(u * u * _WU), jnp.sum(vh * vh * _WV)])

def eval_inputs():
    return (np.array([[1.3, -0.4, 0.7], [0.2, 2.1, -0.9], [-1.1, 0.5, 0.3], [0.6, -0.8, 1.7], [0.9, 0.15, -0.35]], np.float32),)

def eval_reference(a):
    u, s, vh = np.linalg.svd(np.asarray(a, np.float64), full_matrices=False)
    return np.stack([np.sum(s * _WS), np.sum(u * u * _WU), np.sum(vh * vh * _WV)])
