"""E19: a bwd rule that returns one cotangent for a two-argument primal."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x, y):
    return jnp.sin(x) * y


def f_fwd(x, y):
    return f(x, y), (x, y)


def f_bwd(res, g):
    x, y = res
    return (jnp.cos(x) * y * g,)


f.defvjp(f_fwd, f_bwd)
jax.grad(f)(1.0, 2.0)
