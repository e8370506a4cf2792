"""E29: with symbolic_zeros=True, a fwd rule computing on its CustomVJPPrimal arguments directly."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return jnp.sin(x), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
jax.grad(f)(1.0)
