"""nondiff-array hazard: a layer object keeps an array attribute and passes `self.scale` to a nondiff slot.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 (a value traced by `jit` in a
nondiff position). Here the value reaches the custom_vjp through an object: the jitted forward
builds `Layer(scale)`, whose `__init__` stores `jnp.asarray(scale)`, and the method passes
`self.scale`. Under `jit` that attribute is a tracer, and JAX raises UnexpectedTracerError.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2912_method_self_scale", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _times(a, b):
    return a * b


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def gain(scale, x):  # eval: span
    return _times(scale, x)


def gain_fwd(scale, x):
    return gain(scale, x), None


def gain_bwd(scale, _, g):
    return (_times(scale, g),)


gain.defvjp(gain_fwd, gain_bwd)


class Layer:
    def __init__(self, scale):
        self.scale = jnp.asarray(scale)

    def apply(self, x):
        return gain(self.scale, x)  # eval: span


@jax.jit
def forward(x, scale):
    return Layer(scale).apply(x)


def eval_fn(x, scale):
    return forward(x, scale)


def eval_inputs():
    return (np.float32(1.5), np.float32(3.0))


def eval_reference(x, scale):
    return np.float64(x) * np.float64(scale)


def eval_grad_reference(x, scale):
    return (np.float64(scale),)
