"""structure look-alike: a custom_vjp over a dict of arrays whose residual is the bare scale and whose bwd tree-maps the cotangent.

Source: google-deepmind/optax optax/_src/utils.py
https://github.com/google-deepmind/optax/blob/main/optax/_src/utils.py (`scale_gradient`: the
identity in the forward pass; its fwd returns the scale itself, not a tuple, as the residual, and
its bwd returns `(jax.tree.map(lambda g_: g_ * scale, g), None)`: one cotangent pytree for the
whole input pytree and None for the scale). Here a parameter dict passes through it before a loss.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_optax_scale_gradient_tree_map_bwd", "family": "structure",
    "expect": "ok", "source": "google-deepmind/optax optax/_src/utils.py",
    "url": "https://github.com/google-deepmind/optax/blob/main/optax/_src/utils.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1), "heldout": True,
}


@jax.custom_vjp  # eval: span
def damp_gradient(params, scale):
    del scale  # only the backward pass reads it
    return params


def _damp_gradient_fwd(params, scale):
    return damp_gradient(params, scale), scale  # eval: span


def _damp_gradient_bwd(scale, g):
    return jax.tree.map(lambda leaf: leaf * scale, g), None  # eval: span


damp_gradient.defvjp(_damp_gradient_fwd, _damp_gradient_bwd)  # eval: span


def eval_fn(w, b, scale):
    p = damp_gradient({"w": w, "b": b}, scale)
    return p["w"] ** 2 + 3.0 * p["b"]


def eval_inputs():
    return (np.array([0.5, -1.5, 2.0], np.float32), np.array([0.1, 0.2, -0.3], np.float32),
            np.float32(0.25))


def eval_reference(w, b, scale):
    return np.asarray(w, np.float64) ** 2 + 3.0 * np.asarray(b, np.float64)


def eval_grad_reference(w, b, scale):
    w, b, s = np.asarray(w, np.float64), np.asarray(b, np.float64), float(scale)
    return (2.0 * w * s, np.full_like(b, 3.0 * s))
