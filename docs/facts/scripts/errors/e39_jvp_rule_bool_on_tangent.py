"""E39: a jvp rule that branches in Python on its tangent (a tracer under grad)."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.abs(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if t == 0:
        return f(x), t
    return f(x), jnp.sign(x) * t


jax.grad(f)(1.0)
