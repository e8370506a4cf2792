"""E08: a jvp rule whose tangent output has another shape than its primal output."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), jnp.sum(jnp.cos(x) * t)


jax.jvp(f, (jnp.ones(3),), (jnp.ones(3),))
