"""E57: equinox.filter_custom_jvp.defjvps, which equinox does not implement."""
import equinox as eqx
import jax.numpy as jnp


@eqx.filter_custom_jvp
def f(x):
    return jnp.sin(x)


f.defjvps(lambda t, ans, x: jnp.cos(x) * t)
