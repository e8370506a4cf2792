"""nondiff-array hazard: a Python float in nondiff_argnums reaches the custom_vjp through `jit`.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 ("Tracer seems to leak into vjp
through nondiff_argnums"). The reporter jitted a wrapper that forwards its first argument to a
custom_vjp nondiff slot, then took `grad(partial(g, 0.2))`: the float becomes a jit tracer.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2912_float_through_jit", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (1,), "vmap_in_axes": (None, 0),
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def scaled(s, p):  # eval: span
    return s * p


def scaled_fwd(s, p):
    return s * p, None


def scaled_bwd(s, _, g):
    return (s * g,)


scaled.defvjp(scaled_fwd, scaled_bwd)


@jax.jit
def wrapper(s, p):
    return scaled(s, p)  # eval: span


def eval_fn(s, p):
    return wrapper(s, p)


def eval_inputs():
    return (0.2, np.float32(0.1))


def eval_reference(s, p):
    return np.float64(s) * np.asarray(p, np.float64)
