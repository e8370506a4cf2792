"""jax-fem: a spectral function of a symmetric matrix, sum_a f(lambda_a) n_a n_a^T, as a custom_jvp
made inside a factory `get_eigen_f_custom(fn)` that closes over `fn` and its vmapped gradient; the
rule, registered with the nested `@eigen_f.defjvp`, follows Miehe (1998) eq. (19) so that repeated
eigenvalues get a finite derivative.

Adapted from deepmodeling/jax-fem:applications/phase_field_fracture/eigen.py:27 (at 912632b5; the
module's `jax_enable_x64` switch is not set, so the check runs in float32; the caller uses a smooth
`fn`, the phase-field split's positive part squared, on a matrix whose eigenvalues stay apart from 0).
"""
import functools
from functools import partial
import jax
import jax.numpy as np
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/hessian_caller/jaxfem_eigen_f', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax-fem', 'source': 'deepmodeling/jax-fem:applications/phase_field_fracture/eigen.py:27', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'hessian_caller', 'base': 'jaxfem_eigen_f'}

def get_eigen_f_custom(fn):
    grad_fn = jax.grad(fn)
    fn_vmap = jax.vmap(fn)
    grad_fn_vmap = jax.vmap(grad_fn)

    @jax.custom_jvp
    def eigen_f(x):
        evals, evecs = np.linalg.eigh(x)
        evecs = evecs.T
        M = np.einsum('bi,bj->bij', evecs, evecs)
        result = np.sum(M * fn_vmap(evals)[:, None, None], axis=0)
        return result

    @eigen_f.defjvp
    def f_jvp(primals, tangents):
        """Miehe's paper (https://doi.org/10.1002/cnm.404) Eq. (19)."""
        x, = primals
        v, = tangents
        evals, evecs = np.linalg.eigh(x)
        fvals = fn_vmap(evals)
        grads = grad_fn_vmap(evals)
        evecs = evecs.T
        M = np.einsum('bi,bj->bij', evecs, evecs)
        result = np.sum(M * fvals[:, None, None], axis=0)
        MM = np.einsum('bij,bkl->bijkl', M, M)
        term1 = np.sum(MM * grads[:, None, None, None, None], axis=0)
        G = np.einsum('aik,bjl->abijkl', M, M) + np.einsum('ail,bjk->abijkl', M, M)
        diff_evals = evals[:, None] - evals[None, :]
        diff_fvals = fvals[:, None] - fvals[None, :]
        diff_grads = grads[:, None]
        theta = np.where(diff_evals == 0.0, diff_grads, diff_fvals / diff_evals)
        tmp = G * theta[:, :, None, None, None, None]
        tmp1 = np.sum(tmp, axis=(0, 1))
        tmp2 = np.einsum('aa...->...', tmp)
        term2 = 0.5 * (tmp1 - tmp2)
        P = term1 + term2
        jvp_result = np.einsum('ijkl,kl', P, v)
        return (result, jvp_result)
    return eigen_f

def _positive_part_squared(x):
    return 0.5 * (0.5 * (x + np.abs(x))) ** 2

def eval_fn(x):
    return get_eigen_f_custom(_positive_part_squared)(x)

def eval_inputs():
    return (onp.array([[1.0, -0.4, 0.3], [-0.4, 2.0, 0.6], [0.3, 0.6, -1.5]], onp.float32),)

def eval_reference(x):
    x = onp.asarray(x, onp.float64)
    evals, evecs = onp.linalg.eigh(0.5 * (x + onp.swapaxes(x, -1, -2)))
    f = 0.5 * onp.maximum(evals, 0.0) ** 2
    return onp.einsum('...ia,...a,...ja->...ij', evecs, f, evecs)

def hessian_usage(*args):
    return jax.hessian(lambda *a: jnp.sum(eval_fn(*a)), argnums=0)(*args)

def eval_custom():
    return {'hessian_usage': lambda: (hessian_usage(*eval_inputs()), None)[1]}
