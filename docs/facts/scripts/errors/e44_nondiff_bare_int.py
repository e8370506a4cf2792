"""E44: nondiff_argnums given as a bare int >= 1 (not a tuple)."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=1)
def f(x, n):
    return x**n
