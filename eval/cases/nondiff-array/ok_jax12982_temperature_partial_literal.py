"""nondiff-array look-alike: a nondiff temperature bound to a Python float with functools.partial.

Report: jax-ml/jax#12982 https://github.com/jax-ml/jax/issues/12982 (nondiff_argnums behaves like
static arguments: Python values are fine there). The temperature is used as array data (`x / t`)
in the rules, but the only call binds the literal `2.0` with `functools.partial`, and the
partial is what the jitted loss calls: never a tracer.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_jax12982_temperature_partial_literal", "family": "nondiff-array", "expect": "ok",
    "source": "jax-ml/jax#12982", "url": "https://github.com/jax-ml/jax/issues/12982",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def soften(t, x):
    return x / t


def soften_fwd(t, x):
    return x / t, None


def soften_bwd(t, _, g):
    return (g / t,)


soften.defvjp(soften_fwd, soften_bwd)

soften_twice = partial(soften, 2.0)


@jax.jit
def loss(x):
    return soften_twice(x) * soften_twice(x)


def eval_fn(x):
    return loss(x)


def eval_inputs():
    return (np.float32(3.0),)


def eval_reference(x):
    return (np.float64(x) / 2.0) ** 2


def eval_grad_reference(x):
    return (2.0 * np.float64(x) / 4.0,)
