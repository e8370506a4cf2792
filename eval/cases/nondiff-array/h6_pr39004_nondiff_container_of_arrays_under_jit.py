"""nondiff-array hazard: a custom_vjp nondiff_argnums slot holds a dict of arrays that jit traces.

Report: jax-ml/jax#39004 https://github.com/jax-ml/jax/pull/39004 (among custom_vjp fixes, a test that
tracers nested inside containers in nondiff_argnums slots raise UnexpectedTracerError: a container
does not hide its traced leaves from the nondiff check). Here clip bounds travel as a dict in a
nondiff slot and the caller jits over them.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/h6_pr39004_nondiff_container_of_arrays_under_jit", "family": "nondiff-array",
    "expect": "hazard", "source": "jax-ml/jax#39004", "url": "https://github.com/jax-ml/jax/pull/39004",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def soft_clip(x, bounds):  # eval: span
    return jnp.clip(x, bounds["lo"], bounds["hi"])


def _soft_clip_fwd(x, bounds):
    return soft_clip(x, bounds), x


def _soft_clip_bwd(bounds, x, g):  # eval: span
    inside = (x >= bounds["lo"]) & (x <= bounds["hi"])
    return (jnp.where(inside, g, 0.1 * g),)


soft_clip.defvjp(_soft_clip_fwd, _soft_clip_bwd)


@jax.jit
def eval_fn(x, lo, hi):
    return jnp.sum(soft_clip(x, {"lo": lo, "hi": hi}) ** 2)  # eval: span


def eval_inputs():
    return (np.array([-2.0, 0.3, 1.7], np.float32), np.float32(-1.0), np.float32(1.0))


def eval_reference(x, lo, hi):
    return np.asarray(np.sum(np.clip(np.asarray(x, np.float64), float(lo), float(hi)) ** 2))


def eval_grad_reference(x, lo, hi):
    x = np.asarray(x, np.float64)
    y = np.clip(x, float(lo), float(hi))
    inside = (x >= float(lo)) & (x <= float(hi))
    return (np.where(inside, 2 * y, 0.1 * 2 * y),)
