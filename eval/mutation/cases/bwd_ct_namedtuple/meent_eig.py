"""meent (RCWA electromagnetic solver, JAX backend): the general (non-Hermitian) eigensolver
`eig(x, type_complex=jnp.complex128, perturbation=1E-10, device='cpu')` as
`@partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))`: three defaulted options (a dtype, a float
and a string) in nondiff_argnums, the primal a `jnp.linalg.eig` kept on the CPU (a
`jax.pure_callback` with the result's `ShapeDtypeStruct`s on other devices), a pair output
(eigenvalues, eigenvectors). The forward rule calls the custom function again with the
`device` option left to its default and saves `(eig(...), x)`; the backward rule takes the three
options first, then `res, g`, unpacks `(eig_val, eig_vector), x = res` and `grad_eigval,
grad_eigvec = g`, forms the broadened inverse eigenvalue gaps `F` (the diagonal set to zero
with `.at[...].set`), and returns the 1-tuple `grad,` (its real part for a real input). Registered
with `eig.defvjp(eig_fwd, eig_bwd)`.

Adapted from kc-ml2/meent:meent/on_jax/emsolver/primitives.py:7 (commit 07788ae). Changed: the
library jits `jnp.linalg.eig` on the CPU device (`jax.jit(..., device=...)`), which JAX 0.10.2
deprecates (a DeprecationWarning at every trace); here the CPU branch calls `jnp.linalg.eig`
directly (the checks run on the CPU).
The caller takes power sums of the eigenvalues of a real non-symmetric matrix (traces of its
powers: invariant to the eigenvectors' arbitrary scaling and phase, which the rule assumes).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy
import collections
_Grads = collections.namedtuple('_Grads', ['x'])
EVAL = {'id': 'mutation/bwd_ct_namedtuple/meent_eig', 'family': 'mutation', 'expect': 'unknown', 'library': 'meent', 'source': 'kc-ml2/meent:meent/on_jax/emsolver/primitives.py:7', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_ct_namedtuple', 'base': 'meent_eig'}

@partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def eig(x, type_complex=jnp.complex128, perturbation=1e-10, device='cpu'):
    _eig = jnp.linalg.eig
    eigenvalues_shape = jax.ShapeDtypeStruct(x.shape[:-1], type_complex)
    eigenvectors_shape = jax.ShapeDtypeStruct(x.shape, type_complex)
    result_shape_dtype = (eigenvalues_shape, eigenvectors_shape)
    if device == 'cpu':
        res = _eig(x)
    else:
        res = jax.pure_callback(_eig, result_shape_dtype, x)
    return res

def eig_fwd(x, type_complex, perturbation, device):
    return (eig(x, type_complex, perturbation), (eig(x, type_complex, perturbation), x))

def eig_bwd(type_complex, perturbation, device, res, g):
    (eig_val, eig_vector), x = res
    grad_eigval, grad_eigvec = g
    grad_eigval = jnp.diag(grad_eigval)
    W_H = eig_vector.T.conj()
    Fij = eig_val.reshape((1, -1)) - eig_val.reshape((-1, 1))
    Fij = Fij / (jnp.abs(Fij) ** 2 + perturbation)
    Fij = Fij.at[jnp.diag_indices_from(Fij)].set(0)
    grad = jnp.linalg.inv(W_H) @ (grad_eigval.conj() + Fij * (W_H @ grad_eigvec.conj())) @ W_H
    grad = grad.conj()
    if not jnp.iscomplexobj(x):
        grad = grad.real
    return _Grads(grad)
eig.defvjp(eig_fwd, eig_bwd)

def eval_fn(a):
    eigenvalues, _ = eig(a)
    return jnp.stack([jnp.sum(eigenvalues).real, jnp.sum(eigenvalues ** 2).real, 0.2 * jnp.sum(eigenvalues ** 3).real])

def eval_inputs():
    a = numpy.array([[1.2, -0.4, 0.3], [0.7, -0.5, 0.9], [-0.2, 0.6, 2.1]], numpy.float32)
    return (a,)

def eval_reference(a):
    a = numpy.asarray(a, numpy.float64)
    a2 = a @ a
    return numpy.array([numpy.trace(a), numpy.trace(a2), 0.2 * numpy.trace(a2 @ a)])
