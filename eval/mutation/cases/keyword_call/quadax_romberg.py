"""quadax: Romberg integration as a custom_jvp with the integrand in `nondiff_argnums=(0,)`. The
rule (registered with `@romberg.defjvp`) slices the primals and tangents (`primals[:3]`) and gives
the Leibniz rule: the integrand at the limits times the limits' tangents, plus the integral of the
integrand's jvp in its extra arguments, computed by the same integrator. The output is a pair
(integral, QuadratureInfo), a NamedTuple, and the tangent has the same structure.

Adapted from f0uriest/quadax:quadax/romberg.py:11 (commit 15cd01e, "Add jvp rule"; the rule is at
:115). The while loop over levels becomes a fixed number of levels (`_DIVMAX`), the limits are
finite (no interval map), and QuadratureInfo keeps its float error estimate only: the library's
integer counters would need float0 tangents on JAX 0.10.2. The rule's integrand of the tangents
takes them as arguments (`romberg(df, a, b, (args, argsdot))`) where the library's closes over
them (`romberg(df, *primals)`): a nondiff function that closes over the tangents lets a tracer
escape under `jax.grad`. The caller integrates a Gaussian
bump of width parameter `w` between `a` and `b`.
"""
import functools
from functools import partial
from typing import NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/keyword_call/quadax_romberg', 'family': 'mutation', 'expect': 'unknown', 'library': 'quadax', 'source': 'f0uriest/quadax:quadax/romberg.py:11', 'argnums': (0, 1, 2), 'extra': ['jvp', 'jacfwd'], 'operator': 'keyword_call', 'base': 'quadax_romberg'}
_DIVMAX = 6

class QuadratureInfo(NamedTuple):
    err: jax.Array

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def romberg(fun, a, b, args=()):
    """Romberg integration of fun(x, *args) over [a, b]."""
    c = (b - a) / 2
    d = (b + a) / 2

    def vfunc(t):
        return c * fun(d + c * t, *args)
    result = [[vfunc(-1.0) + vfunc(1.0)]]
    for n in range(1, _DIVMAX + 1):
        h = 2.0 / 2 ** n
        s = sum((vfunc(-1.0 + h * (2 * i - 1)) for i in range(1, 2 ** n // 2 + 1)))
        row = [0.5 * result[n - 1][0] + h * s]
        for m in range(1, n + 1):
            row.append(row[m - 1] + (row[m - 1] - result[n - 1][m - 1]) / (4.0 ** m - 1.0))
        result.append(row)
    y = result[-1][-1]
    err = jnp.abs(result[-1][-1] - result[-1][-2])
    return (y, QuadratureInfo(err))

@romberg.defjvp
def _romberg_jvp(fun, primals, tangents):
    a, b, args = primals[:3]
    adot, bdot, argsdot = tangents[:3]
    f1, info1 = romberg(fun, *primals)

    def df(x, args, argsdot):
        return jax.jvp(fun, (x, *args), (jnp.zeros_like(x), *argsdot))[1]
    f2, info2 = romberg(df, a, b, (args, argsdot))
    return ((f1, info1), (fun(b, *args) * bdot - fun(a, *args) * adot + f2, info2))

def _gaussian(x, w):
    return jnp.exp(-w * x * x)

def eval_fn(a, b, w):
    y, _ = romberg(_gaussian, a, b, args=(w,))
    return y

def eval_inputs():
    return (np.float32(0.2), np.float32(1.3), np.float32(0.8))

def eval_reference(a, b, w):
    t, wt = np.polynomial.legendre.leggauss(40)
    a, b, w = (np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(w, np.float64))
    x = (b - a)[..., None] / 2 * t + (b + a)[..., None] / 2
    return (b - a) / 2 * np.sum(wt * np.exp(-w[..., None] * x * x), axis=-1)
