"""nondiff-array hazard: the nondiff scale is read from a config dict built inside a jitted layer.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 (a float passed through `jit`
reached a nondiff position as a tracer). Here the value takes a detour that a spelling-based check
cannot follow: the jitted layer stores `0.5 * scale` in a dict of settings and passes the dict's
field to the custom_vjp; its rule only multiplies the cotangent, so the definition alone is
ambiguous. Under `jit` the field is a tracer and JAX raises UnexpectedTracerError.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2912_scale_in_config_dict", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def damp(s, x):  # eval: span
    return x


def damp_fwd(s, x):
    return x, None


def damp_bwd(s, _, g):
    return (s * g,)


damp.defvjp(damp_fwd, damp_bwd)


@jax.jit
def layer(x, scale):
    settings = {"scale": 0.5 * scale, "label": "damped"}
    return damp(settings["scale"], x)  # eval: span


def eval_fn(x, scale):
    return layer(x, scale)


def eval_inputs():
    return (np.float32(1.5), np.float32(0.4))


def eval_reference(x, scale):
    return np.asarray(x, np.float64)


def eval_grad_reference(x, scale):
    return (0.5 * np.float64(scale),)
