"""nondiff-array hazard (custom_jvp): a traced float in nondiff_argnums, the function used as a lax.cond branch.

Report: jax-ml/jax#9374 https://github.com/jax-ml/jax/issues/9374 ("Crash:
lax.cond(custom_jvp(nondiff_argnums=...)) cannot be traced"). The nondiff value is an operand of
the cond, so a tracer; the jvp rule uses it and grad fails with an escaped tracer. Still open.
"""
import functools as ft

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jvp_jax9374_cond", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#9374", "url": "https://github.com/jax-ml/jax/issues/9374",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@ft.partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def shifted(offset, y):  # eval: span
    return y * 3.0 + offset


@shifted.defjvp
def shifted_jvp(offset, primals, tangents):
    (y,), (y_dot,) = primals, tangents
    return y * 3.0 + offset + 0.0 * (offset + 1.0), y_dot * 3.0


def eval_fn(y, offset):
    return jax.lax.cond(offset < y, shifted, lambda o, v: v, offset, y)  # eval: span


def eval_inputs():
    return (np.float32(2.0), np.float32(1.0))


def eval_reference(y, offset):
    y = np.float64(y)
    return y * 3.0 + offset if offset < y else y
