"""jvp-primal hazard: a straight-through custom_jvp returns the latent, not the binarised value, as primal.

Report: flaport/inverse_design#13 https://github.com/flaport/inverse_design/issues/13 (with
value_and_grad the forward pass of the generator was skipped: the straight-through custom_jvp rule
returned its input as the primal output). Under grad the rule's primal replaces the function's
value, so the loss downstream is evaluated at the latent and both the value and the gradient are
wrong, while plain calls and jit are right.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "jvp-primal/h2_invdesign13_straight_through_returns_latent", "family": "jvp-primal",
    "expect": "hazard", "source": "flaport/inverse_design#13",
    "url": "https://github.com/flaport/inverse_design/issues/13",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["value_and_grad"], "heldout": True,
}
TARGET = np.array([1.0, -1.0, 1.0], np.float32)


@jax.custom_jvp
def binarize(latent):
    return jnp.where(latent > 0.0, 1.0, -1.0)


@binarize.defjvp
def _binarize_jvp(primals, tangents):
    (latent,), (dlatent,) = primals, tangents
    return latent, dlatent  # eval: span


def eval_fn(latent):
    return (binarize(latent) - TARGET) ** 2


def eval_inputs():
    return (np.array([0.4, 0.3, -0.2], np.float32),)


def eval_reference(latent):
    b = np.where(np.asarray(latent) > 0.0, 1.0, -1.0)
    return (b - TARGET.astype(np.float64)) ** 2


def eval_grad_reference(latent):
    b = np.where(np.asarray(latent) > 0.0, 1.0, -1.0)
    return (2.0 * (b - TARGET.astype(np.float64)),)
