"""E55: equinox.filter_custom_vjp called before def_fwd/def_bwd."""
import equinox as eqx
import jax.numpy as jnp


@eqx.filter_custom_vjp
def f(x):
    return jnp.sin(x)


f(jnp.float32(1.0))
