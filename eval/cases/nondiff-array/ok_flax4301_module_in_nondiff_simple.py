"""nondiff-array look-alike: the same Module in an int `nondiff_argnums` slot with `graph_updates=False`, closed over.

Report: google/flax#4301 https://github.com/google/flax/issues/4301 (a user writes an
`nnx.custom_vjp` over a layer Module and an array and asks how bwd should treat the Module;
the answer was that the default mode wants a State cotangent for it). The legal form of the
shortcut: in the simple mode (`graph_updates=False`) an int slot accepts a graph node, and a
Module closed over (never a jit argument) is never traced.
"""
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "nondiff-array/ok_flax4301_module_in_nondiff_simple", "family": "nondiff-array", "expect": "ok",
    "source": "google/flax#4301", "url": "https://github.com/google/flax/issues/4301",
    "written_at": "2026-12-01", "written_at_commit": "291dbe2ca630a8f99be5e5eff70226d8a98c5c21",
    "argnums": (0,),
}


class Gain(nnx.Module):
    def __init__(self):
        self.kernel = nnx.Param(jnp.array(1.5, jnp.float32))


LAYER = Gain()


@nnx.custom_vjp(nondiff_argnums=(0,), graph_updates=False)
def gained(m, x):
    return m.kernel[...] * jnp.tanh(x)


def gained_fwd(m, x):
    return gained(m, x), x


def gained_bwd(m, x, g):
    out_g = g
    return (m.kernel[...] * (1 - jnp.tanh(x) ** 2) * out_g,)


gained.defvjp(gained_fwd, gained_bwd)


def eval_fn(x):
    return gained(LAYER, x)


def eval_inputs():
    return (np.array([0.3, -1.2], np.float32),)


def eval_reference(x):
    return 1.5 * np.tanh(np.asarray(x, np.float64))
