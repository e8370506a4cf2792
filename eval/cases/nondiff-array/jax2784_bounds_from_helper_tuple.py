"""nondiff-array hazard: clip bounds unpacked from a helper's tuple of reductions inside a jitted step.

Report: jax-ml/jax#2784 https://github.com/jax-ml/jax/issues/2784 (bounds computed from the traced
input in nondiff_argnums). Here `lo, hi = spread(x)` unpacks a helper's `(jnp.min(x), jnp.max(x))`
inside a jitted step, and the rules hand the bounds to a clamping helper, so the definition alone
shows no array use. Under `jit` both bounds are tracers: UnexpectedTracerError.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jax2784_bounds_from_helper_tuple", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2784", "url": "https://github.com/jax-ml/jax/issues/2784",
    "written_at": "2026-12-02", "written_at_commit": "115b9c4617e4f87b47d1ecf56abc6b2b19d66835",
    "argnums": (0,),
}


def _clamp(g, a, b):
    return jnp.clip(g, a, b)


def spread(x):
    return jnp.min(x), jnp.max(x)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))  # eval: span
def clip_grad(lo, hi, x):  # eval: span
    return x


def clip_grad_fwd(lo, hi, x):
    return x, None


def clip_grad_bwd(lo, hi, _, g):
    return (_clamp(g, lo, hi),)


clip_grad.defvjp(clip_grad_fwd, clip_grad_bwd)


@jax.jit
def step(x):
    lo, hi = spread(x)
    return jnp.sum(clip_grad(lo, hi, x) ** 2)  # eval: span


def eval_fn(x):
    return step(x)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def eval_reference(x):
    return np.sum(np.asarray(x, np.float64) ** 2)


def eval_grad_reference(x):
    x = np.asarray(x, np.float64)
    return (np.clip(2.0 * x, x.min(), x.max()),)
