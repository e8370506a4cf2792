"""static-in-diff hazard: a custom_vjp calls int() on an argument it receives in a differentiable slot.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646 ("IndexError when defining
custom_vjp and using int"): the exponent was a static jit argument of the caller, but the
custom_vjp took it as a regular (differentiable) argument, so inside the rules it is traced.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "static-in-diff/jax11646_int_of_diff_arg", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-01", "written_at_commit": "4ca3eb3a9f0b546f5fb228ede943c80bf9bdb7b0",
    "argnums": (0,), "static": (1,),
}


@jax.custom_vjp
def int_power(z, n):  # eval: span
    k = int(n)  # eval: span
    return z ** k


def int_power_fwd(z, n):
    k = int(n)  # eval: span
    return int_power(z, n), (z, k)


def int_power_bwd(res, g):
    z, k = res
    return g * k * z ** (k - 1), None


int_power.defvjp(int_power_fwd, int_power_bwd)


@partial(jax.jit, static_argnums=(1,))
def caller(z, n):
    return int_power(z, n)


def eval_fn(z, n):
    return caller(z, n)


def eval_inputs():
    return (np.float32(3.0), 2.0)


def eval_reference(z, n):
    return np.float64(z) ** int(n)
