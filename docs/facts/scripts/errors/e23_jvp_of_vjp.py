"""E23: forward mode (jax.jvp) applied to a custom_vjp function."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return f(x), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)
jax.jvp(f, (1.0,), (1.0,))
