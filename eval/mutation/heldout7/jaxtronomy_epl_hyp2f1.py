"""JAXtronomy: the elliptical power-law lens's angular function, `EPLMajorAxis._hyp2f1_evaluate(f,
t, z)` (Gauss's hypergeometric 2F1(1, t/2; 2 - t/2; z) with a number of series terms chosen
from `f` by `jnp.where` cases and `lax.switch` over a class-level list of `functools.partial`
series), defined in a class body as `@custom_jvp` stacked on `@staticmethod` stacked on `@jit`
(`custom_jvp` imported by name from jax); the rule is registered in the class body by
`@_hyp2f1_evaluate.defjvp` with `@jit` stacked above it (the class attribute is the jitted
rule), and it forwards to `jvp` of a fixed-length series over `primals[1:3]` and `tangents[1:3]`:
`f` only chooses the length, so its tangent is dropped. `derivatives` (a `@staticmethod` over
`@jit`) calls it as `EPLMajorAxis._hyp2f1_evaluate(...)` with a complex `z`.

Adapted from lenstronomy/JAXtronomy:jaxtronomy/LensModel/Profiles/epl.py:297 (commit 565f9a1).
The library's `hyp2f1_lopez_temme_8` is replaced by the plain series of its
`jaxtronomy/Util/hyp2f1_util.py:10` (`hyp2f1_series`, a `lax.fori_loop` of the term
recurrence), written here anew; the lengths are the library's (10 to 500 terms). The
`LensProfileBase` parent and the other methods are dropped. The caller is `derivatives` (the
deflection angles, Tessore & Metcalf 2015 eqs. 22-23) at four image-plane points; its
`nan_to_num` bounds are written `1e10` (the library's int `10**10` overflows an int32 argument
without x64).
"""
import functools
from functools import partial

import jax
import numpy
from jax import custom_jvp, jit, jvp, lax, numpy as jnp

EVAL = {'id': 'mutation/jaxtronomy_epl_hyp2f1', 'family': 'mutation', 'expect': 'ok', 'library': 'jaxtronomy', 'source': 'lenstronomy/JAXtronomy:jaxtronomy/LensModel/Profiles/epl.py:297', 'argnums': (0, 1, 2, 3, 4), 'extra': ['jvp', 'jacfwd']}


@partial(jit, static_argnums=4)
def hyp2f1_series(a, b, c, z, nmax=50):
    z = jnp.asarray(z, dtype=complex)
    term = jnp.ones_like(z)

    def body_fun(i, carry):
        total, term = carry
        term = z * term * (i - 1.0 + a) * (i - 1.0 + b) / (i * (i - 1.0 + c))
        return total + term, term

    total, _ = lax.fori_loop(1, nmax, body_fun, (term, term))
    return total


class EPLMajorAxis:
    param_names = ["b", "t", "q", "center_x", "center_y"]

    # one series per length: nmax must be static
    hyp2f1_fastest = partial(hyp2f1_series, nmax=10)
    hyp2f1_faster = partial(hyp2f1_series, nmax=20)
    hyp2f1_fast = partial(hyp2f1_series, nmax=35)
    hyp2f1_norm = partial(hyp2f1_series, nmax=50)
    hyp2f1_slow = partial(hyp2f1_series, nmax=100)
    hyp2f1_slower = partial(hyp2f1_series, nmax=200)
    hyp2f1_slowest = partial(hyp2f1_series, nmax=500)
    hyp2f1_func_list = [
        hyp2f1_fastest,
        hyp2f1_faster,
        hyp2f1_fast,
        hyp2f1_norm,
        hyp2f1_slow,
        hyp2f1_slower,
        hyp2f1_slowest,
        lambda a, b, c, z: jnp.ones_like(z),
    ]

    @custom_jvp
    @staticmethod
    @jit
    def _hyp2f1_evaluate(f, t, z):
        B = t / 2.0
        C = 2.0 - B
        case = jnp.where(f < 0.92, 5, 6)
        case = jnp.where(f < 0.86, 4, case)
        case = jnp.where(f < 0.73, 3, case)
        case = jnp.where(f < 0.6, 2, case)
        case = jnp.where(f < 0.4, 1, case)
        case = jnp.where(f < 0.12, 0, case)
        case = jnp.where(f == 0, 7, case)
        return lax.switch(case, EPLMajorAxis.hyp2f1_func_list, 1, B, C, z)

    @staticmethod
    @jit
    def _hyp2f1_for_autodiff(t, z):
        B = t / 2.0
        C = 2.0 - B
        return EPLMajorAxis.hyp2f1_slow(1, B, C, z)

    @jit
    @_hyp2f1_evaluate.defjvp
    def _hyp2f1_jvp(primals, tangents):
        return jvp(EPLMajorAxis._hyp2f1_for_autodiff, primals[1:3], tangents[1:3])

    @staticmethod
    @jit
    def derivatives(x, y, b, t, q):
        x = jnp.asarray(x, dtype=float)
        y = jnp.asarray(y, dtype=float)
        Z = q * x + y * 1j
        R = jnp.abs(Z)
        R = jnp.maximum(R, 0.000000001)
        f = (1.0 - q) / (1.0 + q)
        R_omega = Z * EPLMajorAxis._hyp2f1_evaluate(f, t, -f * Z / jnp.conj(Z))
        alpha = 2 / (1 + q) * (b / R) ** t * R_omega
        alpha_real = jnp.nan_to_num(alpha.real, posinf=1e10, neginf=-1e10)
        alpha_imag = jnp.nan_to_num(alpha.imag, posinf=1e10, neginf=-1e10)
        return alpha_real, alpha_imag


def eval_fn(x, y, b, t, q):
    alpha_x, alpha_y = EPLMajorAxis.derivatives(x, y, b, t, q)
    return jnp.stack([alpha_x, alpha_y])


def eval_inputs():
    x = numpy.array([0.8, -1.3, 0.4, 1.7], numpy.float32)
    y = numpy.array([0.5, 0.9, -1.1, -0.3], numpy.float32)
    return (x, y, numpy.float32(1.2), numpy.float32(0.9), numpy.float32(0.7))


def eval_reference(x, y, b, t, q):
    x, y, b, t, q = (numpy.asarray(a, numpy.float64) for a in (x, y, b, t, q))
    Z = q * x + 1j * y
    R = numpy.maximum(numpy.abs(Z), 1e-9)
    f = (1.0 - q) / (1.0 + q)
    z = -f * Z / numpy.conj(Z)
    B, C = t / 2.0, 2.0 - t / 2.0
    term = numpy.ones_like(z)
    total = term.copy()
    for i in range(1, 400):
        term = z * term * (i - 1.0 + 1.0) * (i - 1.0 + B) / (i * (i - 1.0 + C))
        total = total + term
    alpha = 2 / (1 + q) * (b / R) ** t * Z * total
    return numpy.stack([alpha.real, alpha.imag])
