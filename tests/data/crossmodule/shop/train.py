"""The caller: traced values reach shop.ops through jit and grad."""
import jax
import jax.numpy as jnp

from shop import ops
from shop.ops import gather_rows, interpolate, make_decay


def make_kernel(width):
    return lambda d: jnp.exp(-(d * d) / width)


@jax.jit
def picked_energy(x, idx):
    return jnp.sum(gather_rows(x, idx) ** 2)


@jax.jit
def smooth(width, vals):
    return interpolate(make_kernel(width), vals)


def decay_loss(rate, y):
    return jnp.sum(make_decay(rate)(y))


decay_grad = jax.grad(decay_loss)


def cosine(x):
    return ops.external_cos(x)
