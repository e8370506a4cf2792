"""E32: grad of a custom_vmap function (no differentiation rule for custom_vmap_call)."""
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


@custom_vmap
def f(x):
    return jnp.sin(x)


@f.def_vmap
def f_vmap(axis_size, in_batched, x):
    return jnp.sin(x), in_batched[0]


jax.grad(f)(1.0)
