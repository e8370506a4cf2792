"""nondiff-array hazard: a dataclass of options built inside jit carries a traced scale to a nondiff slot.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 (a value traced by `jit` in a
nondiff position). Here the jitted update builds `Options(scale=2.0 * s)`, a plain dataclass, and
passes `opts.scale`; the custom_vjp's rules forward it to a helper. The field is a tracer.
"""
from dataclasses import dataclass
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2912_scale_in_dataclass", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-02", "written_at_commit": "115b9c4617e4f87b47d1ecf56abc6b2b19d66835",
    "argnums": (0,),
}


@dataclass
class Options:
    scale: float
    name: str = "scaled"


def _mul(a, b):
    return a * b


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def scale_grad(s, x):  # eval: span
    return x


def scale_grad_fwd(s, x):
    return x, None


def scale_grad_bwd(s, _, g):
    return (_mul(s, g),)


scale_grad.defvjp(scale_grad_fwd, scale_grad_bwd)


@jax.jit
def update(x, s):
    opts = Options(scale=2.0 * s)
    return scale_grad(opts.scale, x)  # eval: span


def eval_fn(x, s):
    return update(x, s)


def eval_inputs():
    return (np.float32(1.0), np.float32(0.25))


def eval_reference(x, s):
    return np.asarray(x, np.float64)


def eval_grad_reference(x, s):
    return (2.0 * np.float64(s),)
