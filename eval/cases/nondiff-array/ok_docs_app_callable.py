"""nondiff-array look-alike: a module-level function passed through custom_vjp nondiff_argnums.

Source: JAX docs, custom_vjp with nondiff_argnums, the `app(f, x)` example
(https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html).
A callable is the intended use of nondiff_argnums.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_docs_app_callable", "family": "nondiff-array", "expect": "ok",
    "source": "jax docs: custom derivative rules",
    "url": "https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def apply_fn(fn, x):  # eval: span
    return fn(x)


def apply_fn_fwd(fn, x):
    return fn(x), x


def apply_fn_bwd(fn, x, g):
    return (g * jax.grad(fn)(x),)


apply_fn.defvjp(apply_fn_fwd, apply_fn_bwd)


def cube(v):
    return v ** 3


def eval_fn(x):
    return apply_fn(cube, x)


def eval_inputs():
    return (np.float32(1.3),)


def eval_reference(x):
    return np.float64(x) ** 3
