"""E05: a jvp rule whose tangent output has another container than its primal output."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x), jnp.cos(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return (jnp.sin(x), jnp.cos(x)), jnp.cos(x) * t - jnp.sin(x) * t


jax.jvp(f, (1.0,), (1.0,))
