"""silent-wrong hazard: a custom_vjp adds a weight regulariser inside bwd; with no output cotangent bwd never runs.

Report: jax-ml/jax#6523 https://github.com/jax-ml/jax/issues/6523 (an inference routine's bwd
produced weight cotangents from a regularisation term even when the output cotangents were zero;
JAX assumes that zero output cotangents mean zero input cotangents and skips bwd, so the reporter
added a dummy loss output to wake it up). Here the prediction is only monitored (stop_gradient),
so the regulariser's gradient silently comes back as zero.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h2_jax6523_regulariser_in_bwd_skipped", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#6523", "url": "https://github.com/jax-ml/jax/issues/6523",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}
X = np.array([0.5, -1.0, 2.0], np.float32)
DECAY = 0.1


@jax.custom_vjp
def infer(weights, x):
    return jnp.tanh(weights * x)


def _infer_fwd(weights, x):
    y = infer(weights, x)
    return y, (weights, x, y)


def _infer_bwd(res, g):
    weights, x, y = res
    slope = (1.0 - y ** 2) * g
    return slope * x + DECAY * weights, slope * weights  # eval: span


infer.defvjp(_infer_fwd, _infer_bwd)


def eval_fn(weights):
    pred = infer(weights, X)
    return jax.lax.stop_gradient(pred)  # eval: span


def eval_inputs():
    return (np.array([1.0, 0.3, -0.7], np.float32),)


def eval_reference(weights):
    return np.tanh(np.asarray(weights, np.float64) * X.astype(np.float64))


def eval_grad_reference(weights):
    return (DECAY * np.asarray(weights, np.float64),)
