"""fmmax: a general (non-Hermitian, complex) eigendecomposition with gradients for the
eigenvectors, a `@jax.custom_vjp` whose second parameter is an ordinary float with a default
(`eps_relative`, not a nondiff argument: the primal `del`s it, fwd saves it among the residuals
and bwd returns None for it). bwd applies eq. 4.77 of Boeddeker et al. (arXiv:1701.00392) with a
Lorentzian broadening of 1 / (lambda_i - lambda_j) scaled by the eigenvalue range, works with
conjugated cotangents (JAX's convention for complex gradients) and solves against V^H instead
of inverting it; it returns `grad_matrix, None`.

Adapted from facebookresearch/fmmax:src/fmmax/utils.py:111 (`eig`, `_eig_fwd`, `_eig_bwd`;
the optional `jeig` backend and the `pure_callback` route for accelerators are dropped: the
eigensolve is `jnp.linalg.eig` on CPU; the comments are shortened and some names changed). The
primal unpacks the eigensolve into a plain pair: on JAX 0.10.2 `jnp.linalg.eig` returns an
`EigResult` namedtuple, whose structure differs from the pair fwd returns, and the library's
`return _eig(matrix)` raises a TypeError under `grad(jit(...))` there).
"""
import functools
from functools import partial
from typing import Tuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/nondiff_move/fmmax_eig', 'family': 'mutation', 'expect': 'unknown', 'library': 'fmmax', 'source': 'facebookresearch/fmmax:src/fmmax/utils.py:111', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'nondiff_move', 'base': 'fmmax_eig'}
EIG_EPS_RELATIVE = 1e-12
EIG_EPS_MINIMUM = 1e-24

def diag(x: jnp.ndarray) -> jnp.ndarray:
    """A batch-compatible `numpy.diag`."""
    y = jnp.zeros(x.shape + (x.shape[-1],), x.dtype)
    i = jnp.arange(x.shape[-1])
    return y.at[..., i, i].set(x)

def matrix_adjoint(x: jnp.ndarray) -> jnp.ndarray:
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return jnp.conj(jnp.transpose(x, axes=axes))

@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def eig(matrix: jnp.ndarray, eps_relative: float=EIG_EPS_RELATIVE) -> Tuple[jnp.ndarray, jnp.ndarray]:
    """`jnp.linalg.eig` with a differentiable eigenvector output (broadened near degeneracy)."""
    del eps_relative
    eigenvalues, eigenvectors = jnp.linalg.eig(matrix)
    return (eigenvalues, eigenvectors)

def _eig_fwd(matrix, eps_relative):
    eigenvalues, eigenvectors = jnp.linalg.eig(matrix)
    return ((eigenvalues, eigenvectors), (eigenvalues, eigenvectors, eps_relative))

def _eig_bwd(eps_relative, res, grads):
    eigenvalues, eigenvectors, eps_relative = res
    grad_eigenvalues, grad_eigenvectors = grads
    delta_eig = eigenvalues[..., jnp.newaxis, :] - eigenvalues[..., :, jnp.newaxis]
    eig_range_sq = jnp.amax(jnp.abs(delta_eig) ** 2, axis=(-2, -1), keepdims=True)
    eps = jnp.maximum(eps_relative * eig_range_sq, EIG_EPS_MINIMUM)
    f_broadened = delta_eig.conj() / (jnp.abs(delta_eig) ** 2 + eps)
    i = jnp.arange(f_broadened.shape[-1])
    f_broadened = f_broadened.at[..., i, i].set(0)
    grad_eigenvalues_conj = jnp.conj(grad_eigenvalues)
    grad_eigenvectors_conj = jnp.conj(grad_eigenvectors)
    eigenvectors_H = matrix_adjoint(eigenvectors)
    dim = eigenvalues.shape[-1]
    eye_mask = jnp.eye(dim, dtype=bool).reshape((1,) * (eigenvalues.ndim - 1) + (dim, dim))
    rhs = (diag(grad_eigenvalues_conj) + jnp.conj(f_broadened) * (eigenvectors_H @ grad_eigenvectors_conj) - jnp.conj(f_broadened) * (eigenvectors_H @ eigenvectors) @ jnp.where(eye_mask, jnp.real(eigenvectors_H @ grad_eigenvectors_conj), 0.0)) @ eigenvectors_H
    grad_matrix = jnp.conj(jnp.linalg.solve(eigenvectors_H, rhs))
    return (grad_matrix,)
eig.defvjp(_eig_fwd, _eig_bwd)
_C1 = np.array([1.0, -0.5, 0.8], np.float32)
_C2 = np.array([0.3, 1.1, -0.7], np.float32)

def _features(xp, lam, vec):
    """Invariant under the eigenpairs' order and each eigenvector's phase."""
    w = xp.abs(vec) ** 2
    return xp.stack([xp.sum(xp.real(lam) ** 2), xp.sum(xp.imag(lam) * xp.real(lam)), xp.sum(_C1[:, None] * w * xp.real(lam)[None, :]), xp.sum(_C2[:, None] * w * xp.imag(lam)[None, :])])

def eval_fn(re, im):
    lam, vec = eig(re + 1j * im)
    return _features(jnp, lam, vec)

def eval_inputs():
    re = np.array([[1.2, -0.4, 0.3], [0.5, 0.1, -0.9], [-0.7, 0.8, 2.0]], np.float32)
    im = np.array([[0.2, 0.6, -0.1], [-0.3, 0.4, 0.25], [0.15, -0.5, -0.35]], np.float32)
    return (re, im)

def eval_reference(re, im):
    lam, vec = np.linalg.eig(np.asarray(re, np.float64) + 1j * np.asarray(im, np.float64))
    return _features(np, lam, vec)
