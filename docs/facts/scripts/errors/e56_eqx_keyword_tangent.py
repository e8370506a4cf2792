"""E56: equinox.filter_custom_jvp differentiated with respect to a keyword array."""
import equinox as eqx
import jax
import jax.numpy as jnp


@eqx.filter_custom_jvp
def f(x, *, w):
    return jnp.sin(x) * w


@f.def_jvp
def f_jvp(primals, tangents, *, w):
    (x,), (t,) = primals, tangents
    return f(x, w=w), jnp.cos(x) * w * t


jax.grad(lambda w: f(jnp.float32(1.0), w=w))(jnp.float32(2.0))
