"""nondiff-array hazard (custom_jvp, silent): array coefficients in custom_jvp nondiff_argnums get a zero gradient.

Report: y1xiaoc/fwdlap#5 https://github.com/y1xiaoc/fwdlap/issues/5 ("Using fwdlap on vmap'ed
function with custom jvp fails"). A Hermite-polynomial custom_jvp took its (traced) coefficient
array as a nondiff argument; the maintainer's answer quotes the JAX docs: nondiff_argnums is not
for arrays. custom_jvp wraps nondiff arguments in stop_gradient, so differentiating a loss with
respect to the coefficients silently gives zero; jit/vmap over them work.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jvp_fwdlap5_coeffs_zero", "family": "nondiff-array", "expect": "hazard",
    "source": "y1xiaoc/fwdlap#5", "url": "https://github.com/y1xiaoc/fwdlap/issues/5",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def hermite_series(coeffs, x):  # eval: span
    h0, h1 = jnp.ones_like(x), 2.0 * x
    h2 = 2.0 * x * h1 - 2.0 * h0
    return coeffs[0] * h0 + coeffs[1] * h1 + coeffs[2] * h2


@hermite_series.defjvp
def hermite_series_jvp(coeffs, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    slope = 2.0 * coeffs[1] + 8.0 * coeffs[2] * x
    return hermite_series(coeffs, x), slope * x_dot


def eval_fn(coeffs, x):
    return hermite_series(coeffs, x)


def eval_inputs():
    return (np.array([0.5, -1.0, 0.25], np.float32), np.array([0.3, 0.7], np.float32))


def eval_reference(coeffs, x):
    c, x = np.asarray(coeffs, np.float64), np.asarray(x, np.float64)
    return c[0] + c[1] * 2 * x + c[2] * (4 * x * x - 2)
