"""closure look-alike: a layer object with fixed (never differentiated) weights in a nondiff slot.

Report: jax-ml/jax#4520 https://github.com/jax-ml/jax/issues/4520 (a layer passed as the nondiff
callable of a custom_vjp). The correct use of the same construct: the callable's weights are
module-level numpy constants, the loss differentiates only the input, so the nondiff argument is a
plain Python object with no tracer inside, as `nondiff_argnums` intends.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_ho_jax4520_layer_object_constant", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#4520", "url": "https://github.com/jax-ml/jax/issues/4520",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["grad_jit"], "heldout": True,
}
WEIGHT = np.float32(0.7)


class Affine:
    def __init__(self, weight):
        self.weight = weight

    def __call__(self, v):
        return jnp.tanh(self.weight * v)


LAYER = Affine(WEIGHT)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def settle(x, layer):
    return layer(x)


def settle_fwd(x, layer):
    return settle(x, layer), x


def settle_bwd(layer, x, g):
    _, pull = jax.vjp(layer, x)
    return pull(g)


settle.defvjp(settle_fwd, settle_bwd)


@jax.jit
def eval_fn(x):
    return settle(x, LAYER)


def eval_inputs():
    return (np.array([0.3, -1.1, 0.5], np.float32),)


def eval_reference(x):
    return np.tanh(np.float64(WEIGHT) * np.asarray(x, np.float64))
