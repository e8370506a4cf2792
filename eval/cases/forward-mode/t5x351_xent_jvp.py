"""forward-mode hazard: forward-mode differentiation through a custom_vjp cross-entropy loss.

Report: google-research/t5x#351 https://github.com/google-research/t5x/issues/351 ("Support
forward mode differentiation": the loss is a custom_vjp, so jvp / Hessian eigenvalue tools fail).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/t5x351_xent_jvp", "family": "forward-mode", "expect": "hazard",
    "source": "google-research/t5x#351", "url": "https://github.com/google-research/t5x/issues/351",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp", "jacfwd"],
}
TARGET = np.array([0.0, 1.0, 0.0], np.float32)


@jax.custom_vjp
def xent(logits, target):
    return -jnp.sum(target * jax.nn.log_softmax(logits))


def xent_fwd(logits, target):
    return xent(logits, target), (jax.nn.softmax(logits), target)


def xent_bwd(res, g):
    p, target = res
    return g * (p - target), None


xent.defvjp(xent_fwd, xent_bwd)


def eval_fn(logits):
    return xent(logits, TARGET)


def hvp(logits, v):
    return jax.jvp(jax.grad(eval_fn), (logits,), (v,))  # eval: span


def eval_inputs():
    return (np.array([0.5, -0.2, 1.0], np.float32),)


def eval_reference(logits):
    z = np.asarray(logits, np.float64)
    return -(z[1] - np.log(np.sum(np.exp(z))))
