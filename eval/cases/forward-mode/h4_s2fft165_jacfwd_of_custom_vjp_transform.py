"""forward-mode hazard: a linear spectral transform given a custom_vjp (adjoint as bwd) is differentiated with jacfwd.

Report: astro-informatics/s2fft#165 https://github.com/astro-informatics/s2fft/issues/165 (the
library's transforms define custom VJPs, which "restricts the code to reverse mode"; users asked
for forward-mode support, and the reply pointed to custom_jvp instead). Here a small real DFT-like
transform uses its adjoint as bwd, and the caller builds its Jacobian with jax.jacfwd.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/h4_s2fft165_jacfwd_of_custom_vjp_transform", "family": "forward-mode",
    "expect": "hazard", "source": "astro-informatics/s2fft#165",
    "url": "https://github.com/astro-informatics/s2fft/issues/165",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}

_N = 4
_K = np.cos(2.0 * np.pi * np.outer(np.arange(_N), np.arange(_N)) / _N).astype(np.float32)


@jax.custom_vjp  # eval: span
def forward_transform(f):  # eval: span
    return jnp.asarray(_K) @ f


def _transform_fwd(f):
    return forward_transform(f), None


def _transform_bwd(_, g):
    return (jnp.asarray(_K).T @ g,)


forward_transform.defvjp(_transform_fwd, _transform_bwd)


def eval_fn(f):
    return jnp.sum(forward_transform(f) ** 2)


def jacobian_of_coefficients(f):
    return jax.jacfwd(forward_transform)(f)  # eval: span


def eval_inputs():
    return (np.array([1.0, -0.5, 0.25, 2.0], np.float32),)


def eval_reference(f):
    return np.asarray(np.sum((_K.astype(np.float64) @ np.asarray(f, np.float64)) ** 2))


def eval_custom():
    def coeff_jacobian():
        f = eval_inputs()[0]
        return jacobian_of_coefficients(jnp.asarray(f)), _K.astype(np.float64)

    return {"jacfwd_coefficients": coeff_jacobian}
