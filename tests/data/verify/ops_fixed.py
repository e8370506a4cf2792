"""Three custom_vjp functions with arrays in nondiff_argnums (the hazard VJP101 flags)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float


# The JAX documentation's example: lo and hi are only ever Python floats in its call sites.
@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


# jaxtyping shapes: `w` is a weight vector the gradient is scaled by.
@jax.custom_vjp
def scaled_identity(w: Float[Array, "n"], x: Float[Array, "n"]) -> Float[Array, "n"]:
    return x * jnp.sum(w)


def scaled_identity_fwd(w, x):
    return x * jnp.sum(w), (w,)


def scaled_identity_bwd(res, g):
    (w,) = res
    return (None, g * w)


scaled_identity.defvjp(scaled_identity_fwd, scaled_identity_bwd)


# A callable stays in nondiff_argnums; only the mask moves.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def masked_apply(fn: Callable[[jax.Array], jax.Array], mask: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.where(mask > 1.0, fn(x), x)


def masked_apply_fwd(fn, mask, x):
    y, vjp = jax.vjp(fn, x)
    return jnp.where(mask > 1.0, y, x), (x, mask)


def masked_apply_bwd(fn, res, g):
    x, mask = res
    _, vjp = jax.vjp(fn, x)
    (gx,) = vjp(g)
    return (None, jnp.where(mask > 1.0, gx, g))


masked_apply.defvjp(masked_apply_fwd, masked_apply_bwd)


def loss(x):
    return jnp.sum(clip_gradient(-0.5, 0.5, x) ** 2)
