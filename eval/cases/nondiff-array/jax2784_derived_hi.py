"""nondiff-array hazard: a clip bound computed from the traced input sits in nondiff_argnums.

Report: jax-ml/jax#2784 https://github.com/jax-ml/jax/issues/2784 ("Forward-mode differentiation
rule for 'custom_lin' not implemented"). The reporter clipped gradients with a custom_vjp whose
upper bound was derived from x (`hi = x + 1`) and called `jax.grad` of the wrapper.
Today (JAX 0.10.2) this raises UnexpectedTracerError as soon as `hi` is a tracer.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2784_derived_hi", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2784", "url": "https://github.com/jax-ml/jax/issues/2784",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))  # eval: span
def bounded_identity(lo, hi, x):  # eval: span
    return x


def bounded_identity_fwd(lo, hi, x):
    return x, None


def bounded_identity_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


bounded_identity.defvjp(bounded_identity_fwd, bounded_identity_bwd)


def eval_fn(x):
    lo = -1.0
    hi = x + 1.0
    return bounded_identity(lo, hi, x)  # eval: span


def eval_inputs():
    return (np.float32(0.25),)


def eval_reference(x):
    return np.asarray(x, np.float64)


def eval_grad_reference(x):
    return (np.clip(1.0, -1.0, np.asarray(x, np.float64) + 1.0),)
