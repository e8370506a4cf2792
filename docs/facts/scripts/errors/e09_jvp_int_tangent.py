"""E09: a jvp rule that gives an int tangent (not float0) for an integer output."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x), jnp.argmax(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), (jnp.cos(x) * t, jnp.zeros((), jnp.int32))


jax.jvp(f, (jnp.ones(3),), (jnp.ones(3),))
