"""E13: a custom_vjp whose primal has a keyword-only parameter."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x, *, scale):
    return jnp.sin(x) * scale


def f_fwd(x, *, scale):
    return f(x, scale=scale), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)
f(1.0, scale=2.0)
