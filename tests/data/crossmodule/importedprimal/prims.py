"""Custom derivatives defined here and registered in another module (registrations.py,
calm_registrations.py): `from .prims import scale; scale.defvjp(...)` there."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(x, n):
    return jnp.sin(x) * n


@jax.custom_vjp
def mul(x, y):
    return x * y


@jax.custom_jvp
def softsign(x):
    return x / (1.0 + jnp.abs(x))


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def calm_scale(x, n):
    return jnp.sin(x) * n


@jax.custom_vjp
def calm_mul(x, y):
    return x * y


@jax.custom_jvp
def calm_softsign(x):
    return x / (1.0 + jnp.abs(x))
