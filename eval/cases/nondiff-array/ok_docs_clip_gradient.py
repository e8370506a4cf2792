"""nondiff-array look-alike: the JAX docs' clip_gradient with Python-float bounds written at the call.

Source: JAX docs, "Custom derivative rules for Python code", section on custom_vjp with
nondiff_argnums (https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html).
Bounds that are literals inside the traced function are not tracers; jit/vmap/grad all work.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_docs_clip_gradient", "family": "nondiff-array", "expect": "ok",
    "source": "jax docs: custom derivative rules",
    "url": "https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))  # eval: span
def clip_grad(lo, hi, x):  # eval: span
    return x


def clip_grad_fwd(lo, hi, x):
    return x, None


def clip_grad_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_grad.defvjp(clip_grad_fwd, clip_grad_bwd)


def eval_fn(x):
    return clip_grad(-0.75, 0.75, jnp.sin(x))


def eval_inputs():
    return (np.array([0.1, 1.2], np.float32),)


def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))


def eval_grad_reference(x):
    # bwd clips the cotangent reaching clip_grad (1 from the sum) before the chain rule through sin
    return (0.75 * np.cos(np.asarray(x, np.float64)),)
