"""structure hazard: the primal returns (out, lse, row_max) but fwd's primal output keeps two of them.

Report: lucidrains/flash-attention-jax#7 https://github.com/lucidrains/flash-attention-jax/issues/7
(the forward rule's first element did not look like the decorated function's full output; JAX's
message was improved in jax-ml/jax#12611). Here fwd drops the third output: under `grad(jit(f))`
JAX rejects the pair ("must produce a pair ... equal to the output of the custom_vjp-decorated
function"); under plain `grad` the output silently becomes a pair.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/flashattn7_fwd_out_pair_of_three", "family": "structure", "expect": "hazard",
    "source": "lucidrains/flash-attention-jax#7",
    "url": "https://github.com/lucidrains/flash-attention-jax/issues/7",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.custom_vjp
def attend(scores):  # eval: span
    peak = jnp.max(scores, axis=-1, keepdims=True)
    weights = jnp.exp(scores - peak)
    norm = jnp.sum(weights, axis=-1, keepdims=True)
    return weights / norm, jnp.log(norm) + peak, peak  # eval: span


def attend_fwd(scores):
    probs, lse, peak = attend(scores)
    primal = (probs, lse)
    return primal, probs  # eval: span


def attend_bwd(probs, cts):
    d_probs = cts[0]
    return (probs * (d_probs - jnp.sum(d_probs * probs, axis=-1, keepdims=True)),)


attend.defvjp(attend_fwd, attend_bwd)


def eval_fn(scores):
    return attend(scores)[0] * jnp.arange(3.0)


def eval_inputs():
    return (np.array([[0.2, -0.4, 0.9], [0.0, 1.1, -0.3]], np.float32),)


def eval_reference(scores):
    s = np.asarray(scores, np.float64)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) * np.arange(3.0)
