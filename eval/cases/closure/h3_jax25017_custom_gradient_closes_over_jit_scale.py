"""closure hazard: a jax.custom_gradient defined inside the function closes over a traced, non-differentiated scale.

Report: jax-ml/jax#25017 https://github.com/jax-ml/jax/pull/25017 (re-landing jax-ml/jax#24545:
jax.custom_gradient could not close over tracers even when they are not differentiated, e.g. a
jit-traced argument, while custom_vjp can; the PR was still open). Here a gradient-scaling layer
builds its custom_gradient inside the loss and closes over the scale argument; the gradient of the
jitted loss breaks.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/h3_jax25017_custom_gradient_closes_over_jit_scale", "family": "closure",
    "expect": "hazard", "source": "jax-ml/jax#25017", "url": "https://github.com/jax-ml/jax/pull/25017",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "extra": ["grad_jit"], "heldout": True,
}


def scaled_loss(x, scale):
    @jax.custom_gradient  # eval: span
    def scale_grad(v):  # eval: span
        return v, lambda g: (g * scale,)  # eval: span

    return jnp.sum(jnp.sin(scale_grad(x)))


def eval_fn(x, scale):
    return scaled_loss(x, scale)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.0], np.float32), np.float32(3.0))


def eval_reference(x, scale):
    return np.asarray(np.sum(np.sin(np.asarray(x, np.float64))))


def eval_grad_reference(x, scale):
    return (np.cos(np.asarray(x, np.float64)) * float(scale),)
