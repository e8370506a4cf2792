"""Rules written here for primals of prims.py: each is broken (JAX raises when differentiating)."""
import jax.numpy as jnp

from .prims import mul, scale, softsign


def scale_fwd(x, n):
    return jnp.sin(x) * n, jnp.cos(x) * n


def scale_bwd(res, g):
    return (g * res,)


scale.defvjp(scale_fwd, scale_bwd)


def mul_fwd(x, y):
    return x * y, (x, y)


def mul_bwd(res, g):
    x, y = res
    return (g * y,)


mul.defvjp(mul_fwd, mul_bwd)


@softsign.defjvp
def softsign_jvp(primals):
    (x,) = primals
    return softsign(x), 1.0 / (1.0 + jnp.abs(x)) ** 2
