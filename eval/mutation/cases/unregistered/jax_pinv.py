"""jax: the pseudo-inverse as a custom_jvp made by `partial(custom_jvp, nondiff_argnums=(1, 2))`
stacked on `jit(static_argnames=...)`; the rule, registered with `@_pinv.defjvp` above a
matmul-precision decorator, takes `rtol` and `hermitian` first and calls the public wrapper.

Adapted from jax-ml/jax:jax/_src/numpy/linalg.py:1037 (`api.jit` is `jax.jit`,
`config.default_matmul_precision` is `jax.default_matmul_precision`; argument checks, dtype
promotion, the empty-matrix case and the `rcond` alias are dropped; library helpers are jnp calls).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/unregistered/jax_pinv', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:jax/_src/numpy/linalg.py:1037', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'unregistered', 'base': 'jax_pinv'}

def _H(x):
    return jnp.conjugate(jnp.matrix_transpose(x))

def _symmetrize(x):
    return (x + _H(x)) / 2

def pinv(a, rtol=None, hermitian=False):
    return _pinv(a, rtol, hermitian)

@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
@partial(jax.jit, static_argnames='hermitian')
def _pinv(a, rtol=None, hermitian=False):
    arr = jnp.asarray(a)
    arr = jnp.conj(arr)
    if rtol is None:
        max_rows_cols = max(arr.shape[-2:])
        rtol = 10.0 * max_rows_cols * jnp.array(jnp.finfo(arr.dtype).eps)
    rtol = jnp.asarray(rtol)
    u, s, vh = jnp.linalg.svd(arr, full_matrices=False, hermitian=hermitian)
    rtol = lax.expand_dims(rtol[..., np.newaxis], range(s.ndim - rtol.ndim - 1))
    cutoff = rtol * s[..., 0:1]
    s = jnp.where(s > cutoff, s, np.inf).astype(u.dtype)
    res = jnp.matmul(vh.mT, jnp.divide(u.mT, s[..., np.newaxis]), precision=lax.Precision.HIGHEST)
    return lax.convert_element_type(res, arr.dtype)

def _pinv_jvp(rtol, hermitian, primals, tangents):
    a, = primals
    a_dot, = tangents
    p = pinv(a, rtol=rtol, hermitian=hermitian)
    if hermitian:
        a = _symmetrize(a)
        a_dot = _symmetrize(a_dot)
    m, n = a.shape[-2:]
    if m >= n:
        s = p @ _H(p) @ _H(a_dot)
        t = _H(a_dot) @ _H(p) @ p
        p_dot = -(p @ a_dot) @ p + s - s @ a @ p + t - p @ a @ t
    else:
        s = p @ (_H(p) @ _H(a_dot))
        t = _H(a_dot) @ (_H(p) @ p)
        p_dot = -p @ (a_dot @ p) + s - s @ (a @ p) + t - p @ (a @ t)
    return (p, p_dot)
_WEIGHTS = np.array([[1.0, -0.5, 2.0], [0.25, 1.5, -1.0]], np.float32)

def eval_fn(a):
    return pinv(a) * _WEIGHTS

def eval_inputs():
    return (np.array([[1.0, 0.5], [-0.3, 2.0], [0.7, -1.2]], np.float32),)

def eval_reference(a):
    a = np.asarray(a, np.float64)
    return np.linalg.pinv(a) * _WEIGHTS.astype(np.float64)
