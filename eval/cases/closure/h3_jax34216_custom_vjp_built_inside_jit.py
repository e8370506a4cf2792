"""closure hazard: a custom_vjp built inside a jitted loss whose bwd closes over a traced clip bound.

Report: jax-ml/jax#34216 https://github.com/jax-ml/jax/pull/34216 (custom_vjp rules that close over
a jit Tracer end up as Tracer constants in the staged backward pass and fail at lowering with "No
constant handler for type ... DynamicJaxprTracer"; the PR sought a clearer error). Here a
gradient-clipping identity is defined inside a jitted loss and clips with the loss's bound argument.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/h3_jax34216_custom_vjp_built_inside_jit", "family": "closure",
    "expect": "hazard", "source": "jax-ml/jax#34216", "url": "https://github.com/jax-ml/jax/pull/34216",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.jit
def clipped_loss(x, bound):
    @jax.custom_vjp  # eval: span
    def clip_grad(v):  # eval: span
        return v

    def _fwd(v):
        return v, None

    def _bwd(_, g):
        return (jnp.clip(g, -bound, bound),)  # eval: span

    clip_grad.defvjp(_fwd, _bwd)
    return jnp.sum(clip_grad(x) ** 2)


def eval_fn(x, bound):
    return clipped_loss(x, bound)


def eval_inputs():
    return (np.array([0.3, -2.0, 1.5], np.float32), np.float32(1.0))


def eval_reference(x, bound):
    return np.asarray(np.sum(np.asarray(x, np.float64) ** 2))


def eval_grad_reference(x, bound):
    return (np.clip(2.0 * np.asarray(x, np.float64), -float(bound), float(bound)),)
