"""E02: a custom_jvp called without a rule registered by defjvp."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


f(1.0)
