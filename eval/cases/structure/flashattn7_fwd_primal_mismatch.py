"""structure hazard: the decorated primal returns (out, stats) but fwd's primal output is only `out`.

Report: lucidrains/flash-attention-jax#7 https://github.com/lucidrains/flash-attention-jax/issues/7
(fwd's first element did not match the primal output), fixed in PR #8 by decorating a function
that returns only the primal output. JAX now says "Custom VJP fwd rule ... must produce a pair ..."
or a tree mismatch (jax-ml/jax#12611).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/flashattn7_fwd_primal_mismatch", "family": "structure", "expect": "hazard",
    "source": "lucidrains/flash-attention-jax#7",
    "url": "https://github.com/lucidrains/flash-attention-jax/issues/7",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_vjp
def softmax_rows(s):  # eval: span
    row_max = jnp.max(s, axis=-1, keepdims=True)
    e = jnp.exp(s - row_max)
    row_sum = jnp.sum(e, axis=-1, keepdims=True)
    return e / row_sum, row_sum, row_max  # eval: span


def softmax_rows_fwd(s):
    out, row_sum, row_max = softmax_rows(s)
    return out, (out,)  # eval: span


def softmax_rows_bwd(res, g):
    (p,) = res
    return (p * (g - jnp.sum(g * p, axis=-1, keepdims=True)),)


softmax_rows.defvjp(softmax_rows_fwd, softmax_rows_bwd)


def eval_fn(s):
    return softmax_rows(s)[0] * jnp.arange(3.0)


def eval_inputs():
    return (np.array([[0.1, 0.7, -0.2], [1.0, 0.0, 0.5]], np.float32),)


def eval_reference(s):
    s = np.asarray(s, np.float64)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) * np.arange(3.0)
