"""nondiff-array hazard: clip bounds travel in a NamedTuple built by a helper from the traced input.

Report: jax-ml/jax#2784 https://github.com/jax-ml/jax/issues/2784 (clip bounds derived from the
differentiated input sat in nondiff_argnums). Here the bounds are a small NamedTuple whose fields
are annotated `float`, returned by a helper `bounds_around(x, width)`; under `grad` its fields
are tracers, and JAX raises UnexpectedTracerError at the custom_vjp call.
"""
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2784_bounds_namedtuple", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2784", "url": "https://github.com/jax-ml/jax/issues/2784",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


class Bounds(NamedTuple):
    lo: float
    hi: float


def bounds_around(x, width):
    return Bounds(x - width, x + width)


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def clip_grad(bounds, x):  # eval: span
    return x


def clip_grad_fwd(bounds, x):
    return x, None


def clip_grad_bwd(bounds, _, g):
    return (jnp.minimum(jnp.maximum(g, bounds.lo), bounds.hi),)


clip_grad.defvjp(clip_grad_fwd, clip_grad_bwd)


def eval_fn(x):
    b = bounds_around(x, 1.0)
    return clip_grad(b, x)  # eval: span


def eval_inputs():
    return (np.float32(0.25),)


def eval_reference(x):
    return np.asarray(x, np.float64)


def eval_grad_reference(x):
    return (np.clip(1.0, np.float64(x) - 1.0, np.float64(x) + 1.0),)
