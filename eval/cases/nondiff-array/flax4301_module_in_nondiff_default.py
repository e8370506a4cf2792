"""nondiff-array hazard: an nnx Module passed in an int `nondiff_argnums` slot of a default-mode `nnx.custom_vjp`.

Report: google/flax#4301 https://github.com/google/flax/issues/4301 (a user writes an
`nnx.custom_vjp` over a layer Module and an array and asks how bwd should treat the Module;
the answer was that the default mode wants a State cotangent for it). Paraphrased as the shortcut
such a user takes next: declaring the layer non-differentiable with `nondiff_argnums=(0,)`, which
nnx's default mode refuses for a graph node at every call, eager included.
"""
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "nondiff-array/flax4301_module_in_nondiff_default", "family": "nondiff-array", "expect": "hazard",
    "source": "google/flax#4301", "url": "https://github.com/google/flax/issues/4301",
    "written_at": "2026-12-01", "written_at_commit": "291dbe2ca630a8f99be5e5eff70226d8a98c5c21",
    "argnums": (0,),
}


class Gain(nnx.Module):
    def __init__(self):
        self.kernel = nnx.Param(jnp.array(1.5, jnp.float32))


LAYER = Gain()


@nnx.custom_vjp(nondiff_argnums=(0,))  # eval: span
def gained(m, x):
    return m.kernel[...] * jnp.tanh(x)


def gained_fwd(m, x):
    return gained(m, x), x


def gained_bwd(m, x, g):
    _, out_g = g
    return (m.kernel[...] * (1 - jnp.tanh(x) ** 2) * out_g,)


gained.defvjp(gained_fwd, gained_bwd)


def eval_fn(x):
    return gained(LAYER, x)  # eval: span


def eval_inputs():
    return (np.array([0.3, -1.2], np.float32),)


def eval_reference(x):
    return 1.5 * np.tanh(np.asarray(x, np.float64))
