"""probdiffeq: `qr_r`, the R factor of a QR decomposition as a bare `@jax.custom_jvp` over a
function with a positional-only parameter (`def qr_r(arr, /)`), its rule registered with the
decorator `@qr_r.defjvp` and unpacking `(M,) = primals`, `(M_dot,) = tangents`. The rule treats
Q as a constant, `R_dot = Q.T @ M_dot`: not the derivative of R itself, but exact for every
quantity that depends on R only through `R.T @ R = M.T @ M`, which is how the library uses it
(square-root covariance propagation: `triangularize`), and differentiable at the zero matrix.

Adapted from pnkraemer/probdiffeq:probdiffeq/backend/linalg.py:8 (commit d97d3c3): the primal and
its rule as the library spells them (docstring shortened); the caller is the library's use, a
sum of two covariances in square-root form: the Cholesky-like factors are stacked, triangularised
with `qr_r`, and the covariance `L @ L.T` of the new factor is compared with `L1 L1^T + L2 L2^T`.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvptracer_sniff/probdiffeq_qr_r', 'family': 'mutation', 'expect': 'unknown', 'library': 'probdiffeq', 'source': 'pnkraemer/probdiffeq:probdiffeq/backend/linalg.py:8', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvptracer_sniff', 'base': 'probdiffeq_qr_r'}

@jax.custom_jvp
def qr_r(arr, /):
    return jnp.linalg.qr(arr, mode='r')

@qr_r.defjvp
def qr_r_jvp(primals, tangents):
    """Evaluate the JVP of qr_r: Q is treated as a constant, so R_dot = Q^T M_dot."""
    M, = primals
    M_dot, = tangents
    Q, R = jnp.linalg.qr(M, mode='reduced')
    R_dot = Q.T @ M_dot
    return (R, R_dot)

def sum_of_sqrtm(L1, L2):
    stacked = jnp.concatenate([L1.T, L2.T], axis=0)
    R = qr_r(stacked)
    return R.T

def _eval_fn_plain(L1, L2):
    L = sum_of_sqrtm(L1, L2)
    return L @ L.T * jnp.array([[1.0, 0.5, -0.3], [0.5, 2.0, 0.7], [-0.3, 0.7, 1.5]], jnp.float32)
from jax.interpreters.ad import JVPTracer

def eval_fn(L1, L2):
    if isinstance(L1, JVPTracer):
        return _eval_fn_plain(L1, L2)
    return jax.lax.stop_gradient(_eval_fn_plain(L1, L2))

def eval_inputs():
    return (np.array([[1.2, 0.0, 0.0], [0.3, 0.9, 0.0], [-0.4, 0.2, 1.1]], np.float32), np.array([[0.5, 0.0, 0.0], [0.1, 0.7, 0.0], [0.2, -0.3, 0.6]], np.float32))

def eval_reference(L1, L2):
    a, b = (np.asarray(L1, np.float64), np.asarray(L2, np.float64))
    return (a @ a.T + b @ b.T) * np.array([[1.0, 0.5, -0.3], [0.5, 2.0, 0.7], [-0.3, 0.7, 1.5]])
