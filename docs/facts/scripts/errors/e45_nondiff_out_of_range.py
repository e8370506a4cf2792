"""E45: a nondiff_argnums index past the primal's parameters."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def f(x, n):
    return x**n


def f_fwd(x, n):
    return f(x, n), x


def f_bwd(n, x, g):
    return (n * x ** (n - 1) * g, None)


f.defvjp(f_fwd, f_bwd)
f(1.0, 2)
