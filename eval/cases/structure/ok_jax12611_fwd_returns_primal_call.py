"""structure look-alike: fwd returns the decorated function's own (3-tuple) result as primal output.

Report: jax-ml/jax#12611 https://github.com/jax-ml/jax/pull/12611 ("the first output of the
forward rule [must] look like the full output of primal_fn"): here it is that output.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax12611_fwd_returns_primal_call", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#12611", "url": "https://github.com/jax-ml/jax/pull/12611",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def attend(scores):
    peak = jnp.max(scores, axis=-1, keepdims=True)
    weights = jnp.exp(scores - peak)
    norm = jnp.sum(weights, axis=-1, keepdims=True)
    return weights / norm, norm, peak


def attend_fwd(scores):
    outputs = attend(scores)
    return outputs, outputs[0]


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
