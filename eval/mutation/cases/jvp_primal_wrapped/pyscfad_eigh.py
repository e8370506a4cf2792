"""pyscfad: a generalized symmetric eigensolver `_eigh(a, b, lower, turbo, check_finite, driver)`
as `@partial(custom_jvp, nondiff_argnums=(2, 3, 4, 5))` (custom_jvp imported by name), four
defaulted keyword options in nondiff_argnums; the rule, registered with `@_eigh.defjvp`, takes
the four options first, unpacks `a, b = primals` and `at, bt = tangents`, calls the function
again with the options (positionally here; the library passes them by keyword), and returns the pair `(w, v)` with tangents `(dw, dv)`
(first-order perturbation theory for A v = B v w, degenerate pairs masked by a threshold).

Adapted from fishjojo/pyscfad:pyscfad/_src/scipy/linalg.py:35 (commit 0a958a9). The library's
primal calls `scipy.linalg.eigh` on concrete arrays; here it solves the same problem with
jax.numpy (a Cholesky reduction, `jnp.linalg.eigh`), so it traces under jit and vmap, and the
rule's `if idx.sum() > 0:` on traced values becomes a `jnp.where` (the library's helper
`_eigh_jvp_jitted` is inlined; `ops.index_update` becomes `jnp.where` and `.at[].set`, which
trace). The caller (an energy
and a density-like readout of the lowest orbitals) uses the eigenvalues and the squared
eigenvector entries, which do not depend on the eigenvectors' signs.
"""
import functools
from functools import partial
import jax
import jax.numpy as np
import numpy
from jax import custom_jvp
EVAL = {'id': 'mutation/jvp_primal_wrapped/pyscfad_eigh', 'family': 'mutation', 'expect': 'unknown', 'library': 'pyscfad', 'source': 'fishjojo/pyscfad:pyscfad/_src/scipy/linalg.py:35', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_primal_wrapped', 'base': 'pyscfad_eigh'}
DEG_THRESH = 1e-10

@partial(custom_jvp, nondiff_argnums=(2, 3, 4, 5))
def _eigh(a, b, lower=True, turbo=True, check_finite=True, driver=None):
    L = np.linalg.cholesky(b)
    Linv = np.linalg.inv(L)
    w, u = np.linalg.eigh(Linv @ a @ Linv.T)
    v = Linv.T @ u
    return (w, v)

@_eigh.defjvp
def _eigh_jvp(lower, turbo, check_finite, driver, primals, tangents):
    a, b = primals
    at, bt = tangents
    w, v = primal_out = _eigh(*primals, lower, turbo, check_finite, driver)
    eji = w[..., numpy.newaxis, :] - w[..., numpy.newaxis]
    idx = abs(eji) < DEG_THRESH
    eji = np.where(idx, 1e+200, eji)
    eji = eji.at[np.diag_indices_from(eji)].set(1.0)
    eye_n = numpy.eye(a.shape[-1], dtype=a.dtype)
    Fmat = np.reciprocal(eji) - eye_n
    vt_at_v = np.dot(v.conj().T, np.dot(at, v))
    vt_bt_v = np.dot(v.conj().T, np.dot(bt, v))
    da_minus_ds = vt_at_v - np.dot(vt_bt_v, np.diag(w))
    dw = np.diag(da_minus_ds)
    dv = np.dot(v, np.multiply(Fmat, da_minus_ds) - np.multiply(eye_n, vt_bt_v) * 0.5)
    mask = np.where(idx, 1.0, 0.0) - eye_n
    dv = dv + np.dot(v, np.multiply(mask, -0.5 * vt_bt_v))
    return ((primal_out,), (dw, dv))

def eigh(a, b):
    a = 0.5 * (a + a.T.conj())
    b = 0.5 * (b + b.T.conj())
    return _eigh(a, b)

def eval_fn(a, b):
    w, v = eigh(a, b)
    return w[:2] + np.sum(v[:, :2] ** 2 * np.array([[1.0], [0.5], [-0.3]], np.float32), axis=0)

def eval_inputs():
    a = numpy.array([[1.2, 0.3, -0.2], [0.3, 2.1, 0.4], [-0.2, 0.4, 3.3]], numpy.float32)
    b = numpy.array([[1.5, 0.1, 0.0], [0.1, 1.2, 0.2], [0.0, 0.2, 1.1]], numpy.float32)
    return (a, b)

def eval_reference(a, b):
    a, b = (numpy.asarray(a, numpy.float64), numpy.asarray(b, numpy.float64))
    a = 0.5 * (a + numpy.swapaxes(a, -1, -2))
    b = 0.5 * (b + numpy.swapaxes(b, -1, -2))
    Linv = numpy.linalg.inv(numpy.linalg.cholesky(b))
    w, u = numpy.linalg.eigh(Linv @ a @ numpy.swapaxes(Linv, -1, -2))
    v = numpy.swapaxes(Linv, -1, -2) @ u
    return w[..., :2] + numpy.sum(v[..., :, :2] ** 2 * numpy.array([[1.0], [0.5], [-0.3]]), axis=-2)
