"""The look-alikes of registrations.py, written right: JAX differentiates each."""
import jax.numpy as jnp

from .prims import calm_mul, calm_scale, calm_softsign


def scale_fwd(x, n):
    return jnp.sin(x) * n, jnp.cos(x) * n


def scale_bwd(n, res, g):
    return (g * res,)


calm_scale.defvjp(scale_fwd, scale_bwd)


def mul_fwd(x, y):
    return x * y, (x, y)


def mul_bwd(res, g):
    x, y = res
    return g * y, g * x


calm_mul.defvjp(mul_fwd, mul_bwd)


@calm_softsign.defjvp
def softsign_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return calm_softsign(x), t / (1.0 + jnp.abs(x)) ** 2
