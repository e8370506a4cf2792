"""The unsafe residual-plus-None fix (VJP102) is wrong here: bwd branches on `gate` in Python.
Once `gate` is a residual it is traced under jit(grad), and `if not gate` raises; the original,
with `gate` concrete, works. `vjplint --fix --unsafe-fixes --verify` must leave it unchanged."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def gated(gate, x):
    if gate is None:
        return x
    return jnp.multiply(gate, x)


def gated_fwd(gate, x):
    return gated(gate, x), None


def gated_bwd(gate, _, g):
    if not gate:
        return (g,)
    return (jnp.multiply(gate, g),)


gated.defvjp(gated_fwd, gated_bwd)
