"""E04: a jvp rule that returns the tangent alone, not (primal_out, tangent_out)."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.cos(x) * t


jax.jvp(f, (1.0,), (1.0,))
