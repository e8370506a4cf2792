"""closure hazard: a layer object holding the trained weights goes through a nondiff slot.

Report: jax-ml/jax#4520 https://github.com/jax-ml/jax/issues/4520 (a Haiku layer was passed as the
nondiff callable of a custom_vjp whose bwd calls it again; the forward pass ran, `grad` of the loss
with respect to the layer's parameters failed). Here the layer is a small callable class built from
the weights the loss differentiates, so the object handed to the nondiff slot carries a tracer in
its attributes; nothing at the call site looks like an array.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ho_jax4520_layer_object_nondiff", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#4520", "url": "https://github.com/jax-ml/jax/issues/4520",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


class Affine:
    def __init__(self, weight):
        self.weight = weight

    def __call__(self, v):
        return jnp.tanh(self.weight * v)


@partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def settle(x, layer):  # eval: span
    return layer(x)


def settle_fwd(x, layer):
    return settle(x, layer), x


def settle_bwd(layer, x, g):
    _, pull = jax.vjp(layer, x)
    return pull(g)


settle.defvjp(settle_fwd, settle_bwd)


def eval_fn(w, x):
    return settle(x, Affine(w))  # eval: span


def eval_inputs():
    return (np.float32(0.7), np.array([0.3, -1.1, 0.5], np.float32))


def eval_reference(w, x):
    return np.tanh(np.float64(w) * np.asarray(x, np.float64))
