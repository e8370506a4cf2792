"""E61: a custom_vmap rule whose batched-spec has another structure than its output."""
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


@custom_vmap
def f(x):
    return jnp.sin(x), jnp.cos(x)


@f.def_vmap
def f_vmap(axis_size, in_batched, x):
    return (jnp.sin(x), jnp.cos(x)), True


jax.vmap(f)(jnp.ones(3))
