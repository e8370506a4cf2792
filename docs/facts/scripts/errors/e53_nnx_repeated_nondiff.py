"""E53: flax.nnx.custom_vjp with a position repeated in nondiff_argnums."""
import jax
import jax.numpy as jnp
from flax import nnx


@nnx.custom_vjp(nondiff_argnums=(1, 1))
def f(x, n):
    return x**n


def f_fwd(x, n):
    return f(x, n), x


def f_bwd(n, x, g):
    (x_g, out_g) = g
    return (out_g * n * x ** (n - 1),)


f.defvjp(f_fwd, f_bwd)
f(1.0, 2)
