"""structure hazard: fwd returns what a shared helper returns, three values instead of a pair.

Report: lucidrains/flash-attention-jax#7 https://github.com/lucidrains/flash-attention-jax/issues/7
and jax-ml/jax#12611 (the fwd rule returned the output together with extra statistics; JAX now
says "Custom VJP fwd rule ... must produce a pair (list or tuple of length two)"). Here the
forward computation lives in a helper that both the primal and fwd call.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/flashattn7_fwd_triple_from_helper", "family": "structure", "expect": "hazard",
    "source": "lucidrains/flash-attention-jax#7",
    "url": "https://github.com/lucidrains/flash-attention-jax/issues/7",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _softmax_parts(x):
    m = jnp.max(x)
    e = jnp.exp(x - m)
    s = jnp.sum(e)
    return e / s, m, s


@jax.custom_vjp
def softmax(x):
    return _softmax_parts(x)[0]


def softmax_fwd(x):
    return _softmax_parts(x)  # eval: span


def softmax_bwd(res, g):
    p, _, _ = res
    return (p * (g - jnp.sum(g * p)),)


softmax.defvjp(softmax_fwd, softmax_bwd)


def eval_fn(x):
    return softmax(x)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def eval_reference(x):
    e = np.exp(np.asarray(x, np.float64) - np.max(x))
    return e / np.sum(e)
