"""E30: a jvp rule with symbolic_zeros=True doing arithmetic on a tangent that is a SymbolicZero."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x, y):
    return jnp.sin(x) * y


def f_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return f(x, y), jnp.cos(x) * y * tx + jnp.sin(x) * ty


f.defjvp(f_jvp, symbolic_zeros=True)
jax.grad(f)(1.0, 2.0)
