"""nondiff-array hazard: a traced learning rate bound into the custom_vjp with functools.partial.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 (the reporter's own call was
`grad(partial(g, 0.2))`, and the float became a tracer inside `jit`). Here the jitted step binds
its `lr` parameter into the custom_vjp with `functools.partial` and calls the partial: the nondiff
position receives the tracer without ever being written at a call of the custom_vjp.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2912_partial_lr_jit", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (1,), "vmap_in_axes": (None, 0),
}


def _scale(a, g):
    return a * g


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def scaled_identity(lr, x):  # eval: span
    return x


def scaled_identity_fwd(lr, x):
    return x, None


def scaled_identity_bwd(lr, _, g):
    return (_scale(lr, g),)


scaled_identity.defvjp(scaled_identity_fwd, scaled_identity_bwd)


@jax.jit
def direction(lr, x):
    step = partial(scaled_identity, lr)  # eval: span
    return step(x)  # eval: span


def eval_fn(lr, x):
    return direction(lr, x)


def eval_inputs():
    return (0.1, np.float32(2.0))


def eval_reference(lr, x):
    return np.asarray(x, np.float64)


def eval_grad_reference(lr, x):
    return (np.float64(lr),)
