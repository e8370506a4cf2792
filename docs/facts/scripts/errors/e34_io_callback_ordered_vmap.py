"""E34: vmap of a custom_vjp whose primal makes an ordered io_callback."""
import jax
import jax.numpy as jnp
from jax.experimental import io_callback


@jax.custom_vjp
def f(x):
    io_callback(print, None, x, ordered=True)
    return jnp.sin(x)


def f_fwd(x):
    return f(x), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)
jax.vmap(f)(jnp.ones(3))
