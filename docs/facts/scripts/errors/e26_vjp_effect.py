"""E26: an ordered io_callback (an effect) inside a custom_vjp function, under grad."""
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
jax.jit(jax.grad(f))(1.0)
