"""structure look-alike: custom_vjp with symbolic_zeros=True; fwd unwraps .value/.perturbed, bwd returns plain cotangents.

Report: jax-ml/jax#15088 https://github.com/jax-ml/jax/pull/15088 (custom_vjp symbolic-zeros
support: with defvjp(..., symbolic_zeros=True) fwd receives each primal wrapped with a perturbed
flag and bwd may get SymbolicZero cotangents). Here a bilinear coupling skips the weight's
cotangent work when the weight is not being differentiated.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h3_pr15088_symbolic_zeros_custom_vjp", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#15088", "url": "https://github.com/jax-ml/jax/pull/15088",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def couple(x, w):
    return jnp.tanh(x) * w


def _couple_fwd(x, w):
    xv, wv = x.value, w.value  # eval: span
    t = jnp.tanh(xv)
    return t * wv, (t, wv, w.perturbed)


def _couple_bwd(res, g):
    t, wv, w_perturbed = res
    gx = (1.0 - t ** 2) * wv * g
    gw = t * g if w_perturbed else None
    return gx, gw


couple.defvjp(_couple_fwd, _couple_bwd, symbolic_zeros=True)  # eval: span


def eval_fn(x, w):
    return jnp.sum(couple(x, w))


def eval_inputs():
    return (np.array([0.4, -1.0, 1.7], np.float32), np.array([2.0, 0.5, -1.0], np.float32))


def eval_reference(x, w):
    return np.asarray(np.sum(np.tanh(np.asarray(x, np.float64)) * np.asarray(w, np.float64)))
