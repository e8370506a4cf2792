"""The residual-plus-None fix is wrong here, and no static check sees it: a helper of bwd
branches on `gate` in Python three calls deep (the lint follows a value two calls deep). Once `gate` is a residual it is traced under jit(grad) and the
branch raises; the original works. `vjplint --fix --verify` must leave it unchanged."""

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


def _scaled(gate, g):
    return _picked(gate, g)


def _picked(gate, g):
    return _branch(gate, g)


def _branch(gate, g):
    if not gate:
        return g
    return jnp.multiply(gate, g)


def gated_bwd(gate, _, g):
    return (_scaled(gate, g),)


gated.defvjp(gated_fwd, gated_bwd)
