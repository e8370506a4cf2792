"""pyscfad: a full singular value decomposition of a wide matrix as a bare `@jax.custom_jvp` on a
one-parameter function returning the triple `(U, s, Vt)`; the rule, registered with
`@_svd.defjvp`, unpacks `A, = primals` and `dA, = tangents` (trailing-comma unpacking), raises
NotImplementedError for a tall matrix, calls the function again, and returns
`(U, s, Vt), (dU, ds, _H(dV))`, the null-space block of V included.

Adapted from fishjojo/pyscfad:pyscfad/backend/_jax/scipy/linalg.py:83 (commit f70962c). JAX's
private `_T` / `_H` (jax._src.lax.linalg) are defined here as small helpers. The caller reads
the singular values and two matrices that do not depend on the singular vectors' signs or on
the basis chosen for V's null space: U diag(s^3) U^T and V_m^T diag(s) V_m (V_m the first m rows
of Vt).
"""
import functools
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np
EVAL = {'id': 'mutation/jvp_tangent_reduced/pyscfad_svd', 'family': 'mutation', 'expect': 'unknown', 'library': 'pyscfad', 'source': 'fishjojo/pyscfad:pyscfad/backend/_jax/scipy/linalg.py:83', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_reduced', 'base': 'pyscfad_svd'}

def _T(x):
    return jnp.swapaxes(x, -1, -2)

def _H(x):
    return jnp.conj(_T(x))

@jax.custom_jvp
def _svd(a):
    return jsp.linalg.svd(a, full_matrices=True, compute_uv=True)

@_svd.defjvp
def _svd_jvp(primals, tangents):
    A, = primals
    dA, = tangents
    m, n = A.shape
    if m > n:
        raise NotImplementedError('Use svd(A.conj().T) instead.')
    U, s, Vt = _svd(A)
    Ut = _H(U)
    V = _H(Vt)
    s_dim = s[..., jnp.newaxis, :]
    dS = Ut @ dA @ V
    ds = jnp.diagonal(dS, 0, -2, -1).real
    s_diffs = (s_dim + _T(s_dim)) * (s_dim - _T(s_dim))
    s_diffs_zeros = (s_diffs == 0).astype(s.dtype)
    F = 1 / (s_diffs + s_diffs_zeros) - s_diffs_zeros
    dP1 = dS[..., :, :m]
    dP2 = dS[..., :, m:]
    dSS = dP1 * s_dim
    SdS = _T(s_dim) * dP1
    dU = U @ (F * (dSS + _H(dSS)))
    dD1 = F * (SdS + _H(SdS))
    s_zeros = (s == 0).astype(s.dtype)
    s_inv = 1 / (s + s_zeros) - s_zeros
    dD2 = s_inv[..., :, jnp.newaxis] * dP2
    dV = jnp.zeros_like(V)
    dV = dV.at[..., :m, :m].set(dD1)
    dV = dV.at[..., :m, m:].set(-dD2)
    dV = dV.at[..., m:, :m].set(dD2.conj().T)
    dV = V @ dV
    return ((U, s, Vt), (jnp.sum(dU), ds, _H(dV)))

def eval_fn(a):
    U, s, Vt = _svd(a)
    m = a.shape[0]
    left = U * s ** 3 @ U.T
    right = Vt[:m].T * s @ Vt[:m]
    return jnp.concatenate([s, left.ravel(), right.ravel()])

def eval_inputs():
    return (np.array([[1.2, -0.4, 0.7], [0.3, 0.9, -0.5]], np.float32),)

def eval_reference(a):
    a = np.asarray(a, np.float64)
    U, s, Vt = np.linalg.svd(a, full_matrices=True)
    m = a.shape[0]
    left = U * s ** 3 @ U.T
    right = Vt[:m].T * s @ Vt[:m]
    return np.concatenate([s, left.ravel(), right.ravel()])
