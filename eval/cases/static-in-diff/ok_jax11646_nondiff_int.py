"""static-in-diff look-alike: the exponent of jax-ml/jax#11646 declared in nondiff_argnums.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646. A Python number that the rules
need as a Python value is what nondiff_argnums is for; bwd gets it first.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_jax11646_nondiff_int", "family": "static-in-diff", "expect": "ok",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-01", "written_at_commit": "4ca3eb3a9f0b546f5fb228ede943c80bf9bdb7b0",
    "argnums": (0,), "static": (1,),
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def int_power(z, n):  # eval: span
    return z ** int(n)


def int_power_fwd(z, n):
    return int_power(z, n), z


def int_power_bwd(n, z, g):
    k = int(n)
    return (g * k * z ** (k - 1),)


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
