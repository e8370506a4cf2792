"""structure hazard: an nnx.custom_vjp bwd written jax-style, taking its second argument as the output cotangent.

Report: flax docs, nnx transforms API (nnx.custom_vjp)
https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/transforms.html (unlike jax.custom_vjp,
the nnx bwd receives a pair (input updates, output cotangent); the discrepancy was pointed out on
google/flax#4306 and the docs expanded to say so). Here a Module-valued activation uses the
jax.custom_vjp signature, so the "cotangent" it multiplies is that pair.
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "structure/h3_flaxdocs_nnx_custom_vjp_jax_style_bwd", "family": "structure",
    "expect": "hazard", "source": "flax docs: nnx.custom_vjp API",
    "url": "https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/transforms.html",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


class Phase(nnx.Module):
    def __init__(self, w):
        self.w = nnx.Param(w)


@nnx.custom_vjp
def rotate(m: Phase):
    return jnp.sin(m.w[...])


def _rotate_fwd(m: Phase):
    return rotate(m), (jnp.cos(m.w[...]),)


def _rotate_bwd(res, g):  # eval: span
    (cos_w,) = res
    return (nnx.State(dict(w=cos_w * g)),)  # eval: span


rotate.defvjp(_rotate_fwd, _rotate_bwd)


def eval_fn(w):
    return jnp.sum(rotate(Phase(w)))


def eval_inputs():
    return (np.array([0.2, 1.0, -0.5], np.float32),)


def eval_reference(w):
    return np.asarray(np.sum(np.sin(np.asarray(w, np.float64))))


def eval_custom():
    def nnx_grads():
        w = np.array([0.2, 1.0, -0.5], np.float32)
        grads = nnx.grad(lambda m: jnp.sum(rotate(m)))(Phase(jnp.asarray(w)))
        return grads["w"][...], np.cos(w.astype(np.float64))

    return {"nnx_grad": nnx_grads}
