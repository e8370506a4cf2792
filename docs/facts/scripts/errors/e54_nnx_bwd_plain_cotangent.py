"""E54: flax.nnx.custom_vjp bwd (default mode) reading g as the output cotangent, not (updates_g, out_g)."""
import jax
import jax.numpy as jnp
from flax import nnx


@nnx.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return f(x), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)
jax.grad(f)(1.0)
