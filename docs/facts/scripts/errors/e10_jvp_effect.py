"""E10: an ordered io_callback (an effect) inside a custom_jvp function, under grad."""
import jax
import jax.numpy as jnp
from jax.experimental import io_callback


@jax.custom_jvp
def f(x):
    io_callback(print, None, x, ordered=True)
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), jnp.cos(x) * t


jax.jit(jax.grad(f))(1.0)
