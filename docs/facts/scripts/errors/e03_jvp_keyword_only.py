"""E03: a custom_jvp whose primal has a keyword-only parameter, called with it."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x, *, scale):
    return jnp.sin(x) * scale


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x, scale=2.0), jnp.cos(x) * t * 2.0


f(1.0, scale=2.0)
