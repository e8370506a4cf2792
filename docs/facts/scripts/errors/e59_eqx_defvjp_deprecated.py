"""E59: equinox.filter_custom_vjp.defvjp, deprecated since equinox 0.10.7 (a warning)."""
import equinox as eqx
import jax.numpy as jnp


@eqx.filter_custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return jnp.sin(x), x


def f_bwd(res, g, x):
    return jnp.cos(res) * g


f.defvjp(f_fwd, f_bwd)
