"""dynamiqs: the cached least-squares solve of the low-rank master-equation integrator,
`_qr_solve_cached(A, cache, B)`, a bare `@jax.custom_jvp` over three arguments, the middle one a
pytree (the tuple `(q, r)` of a QR factorisation of A, built under `stop_gradient`); the primal
`del A`s its first argument and solves with the cache alone; the rule, registered with
`@_qr_solve_cached.defjvp`, unpacks `A, cache, B = primals` and `dA, _dcache, dB = tangents` (the
cache's tangent is ignored), calls the function again and returns the pseudoinverse JVP
dX = A^+ (dB - dA X + (A^+)^H dA^H (B - A X)).

Adapted from dynamiqs/dynamiqs:dynamiqs/integrators/core/low_rank_integrator.py:53 (commit 26d814e,
"Cache decompositions in linear solve"); `_qr_cache`, `_qr_pinv_apply` and `_qr_pinv_h_apply` are
kept. The library's arrays are complex (`.conj().T` kept; on the real inputs here it is `.T`). The
caller is one jump term of the library's vector field, 0.5 (Lm tmp^H) - 0.5 (L^H Lm) with
Lm = L m and tmp = A^+ Lm, for a real low-rank factor m (4 x 2) and jump operator L (4 x 4).
"""
import functools
from typing import Any
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsp_linalg
import numpy
from jax import Array
EVAL = {'id': 'mutation/jvp_list_pair/dynamiqs_qr_solve', 'family': 'mutation', 'expect': 'unknown', 'library': 'dynamiqs', 'source': 'dynamiqs/dynamiqs:dynamiqs/integrators/core/low_rank_integrator.py:53', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_list_pair', 'base': 'dynamiqs_qr_solve'}

def _qr_cache(A: Array) -> tuple[Array, Array]:
    q, r = jnp.linalg.qr(A, mode='reduced')
    q = jax.lax.stop_gradient(q)
    r = jax.lax.stop_gradient(r)
    return (q, r)

def _qr_pinv_apply(cache: tuple[Array, Array], rhs: Array) -> Array:
    q, r = cache
    return jsp_linalg.solve_triangular(r, q.conj().T @ rhs, lower=False)

def _qr_pinv_h_apply(cache: tuple[Array, Array], rhs: Array) -> Array:
    q, r = cache
    return q @ jsp_linalg.solve_triangular(r, rhs, trans='C', lower=False)

@jax.custom_jvp
def _qr_solve_cached(A: Array, cache: tuple[Array, Array], B: Array) -> Array:
    del A
    return _qr_pinv_apply(cache, B)

@_qr_solve_cached.defjvp
def _qr_solve_cached_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Array, Array]:
    A, cache, B = primals
    dA, _dcache, dB = tangents
    x = _qr_solve_cached(A, cache, B)
    res = B - A @ x
    dvec = dB - dA @ x + _qr_pinv_h_apply(cache, dA.conj().T @ res)
    dx = _qr_pinv_apply(cache, dvec)
    return [x, dx]

def eval_fn(m, L):
    solve_cache = _qr_cache(m)
    Lm = L @ m
    tmp = _qr_solve_cached(m, solve_cache, Lm)
    return 0.5 * (Lm @ tmp.conj().T) - 0.5 * (L.conj().T @ Lm)

def eval_inputs():
    m = numpy.array([[0.9, 0.1], [0.2, -0.7], [-0.3, 0.4], [0.5, 0.6]], numpy.float32)
    L = numpy.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.4, 0.0], [0.0, 0.0, 0.0, 1.7], [0.3, 0.0, 0.0, 0.0]], numpy.float32)
    return (m, L)

def eval_reference(m, L):
    m, L = (numpy.asarray(m, numpy.float64), numpy.asarray(L, numpy.float64))
    Lm = L @ m
    tmp = numpy.linalg.pinv(m) @ Lm
    return 0.5 * (Lm @ numpy.swapaxes(tmp, -1, -2)) - 0.5 * (numpy.swapaxes(L, -1, -2) @ Lm)
