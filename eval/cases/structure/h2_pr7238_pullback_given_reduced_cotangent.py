"""structure hazard: bwd feeds a stored jax.vjp pullback a reduced cotangent of the wrong shape.

Report: jax-ml/jax#7238 https://github.com/jax-ml/jax/pull/7238 ("Improve error message when vjp
is called with cotangent of wrong shape": it used to be an internal assertion). Here a custom_vjp
keeps the pullback of a feature map as its residual, and bwd sums the incoming cotangent before
calling it, as if the output were a scalar.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h2_pr7238_pullback_given_reduced_cotangent", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#7238", "url": "https://github.com/jax-ml/jax/pull/7238",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}


def features(x):
    return jnp.sin(x) * jnp.exp(-0.5 * x)


@jax.custom_vjp
def smooth_features(x):
    return features(x)


def _smooth_features_fwd(x):
    return jax.vjp(features, x)


def _smooth_features_bwd(pullback, g):
    return pullback(jnp.sum(g))  # eval: span


smooth_features.defvjp(_smooth_features_fwd, _smooth_features_bwd)


def eval_fn(x):
    return smooth_features(x) * jnp.arange(1.0, 4.0)


def eval_inputs():
    return (np.array([0.2, 1.0, -0.7], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sin(x) * np.exp(-0.5 * x) * np.arange(1.0, 4.0)
