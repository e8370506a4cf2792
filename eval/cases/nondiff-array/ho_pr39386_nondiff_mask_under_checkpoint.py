"""nondiff-array hazard: a custom_jvp with an array nondiff argument, staged by `jax.checkpoint`.

Report: jax-ml/jax#39386 https://github.com/jax-ml/jax/pull/39386 (the fix for jax-ml/jax#20889
describes the failure: a custom_jvp call whose array-valued `nondiff_argnums` argument is staged
out, by jit or scan, and differentiated later sees a stale tracer in its rule; inline paths work).
Here the rule is correct and the mask is an ordinary array argument of the loss, but the block is
wrapped in `jax.checkpoint`, which stages it before `grad` differentiates it.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ho_pr39386_nondiff_mask_under_checkpoint", "family": "nondiff-array",
    "expect": "hazard", "source": "jax-ml/jax#39386", "url": "https://github.com/jax-ml/jax/pull/39386",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "vmap_in_axes": (0, None), "heldout": True,
}


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def masked_softplus(x, mask):  # eval: span
    return jnp.where(mask, jax.nn.softplus(x), 0.0)


@masked_softplus.defjvp
def masked_softplus_jvp(mask, primals, tangents):
    (x,), (dx,) = primals, tangents
    return masked_softplus(x, mask), jnp.where(mask, jax.nn.sigmoid(x) * dx, 0.0)


@jax.checkpoint
def block(x, mask):
    return masked_softplus(x, mask) * 2.0  # eval: span


def eval_fn(x, mask):
    return block(x, mask)


def eval_inputs():
    return (np.array([0.3, -1.2, 2.0], np.float32), np.array([True, False, True]))


def eval_reference(x, mask):
    x = np.asarray(x, np.float64)
    return np.where(mask, 2.0 * np.log1p(np.exp(x)), 0.0)
