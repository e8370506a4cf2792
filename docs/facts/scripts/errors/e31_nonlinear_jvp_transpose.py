"""E31: a jvp rule nonlinear in its tangent, under reverse mode (no transpose rule)."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), jnp.cos(x) * jnp.tanh(t)


jax.grad(f)(1.0)
