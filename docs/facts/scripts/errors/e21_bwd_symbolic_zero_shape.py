"""E21: a bwd rule that returns a SymbolicZero of another shape than its input."""
import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero


@jax.custom_vjp
def f(x, y):
    return jnp.sin(x) + jnp.sum(y)


def f_fwd(x, y):
    return f(x, y), x


def f_bwd(x, g):
    return jnp.cos(x) * g, SymbolicZero(jax.core.ShapedArray((), jnp.float32))


f.defvjp(f_fwd, f_bwd)
jax.grad(f)(1.0, jnp.ones(3))
