"""E01: defjvps on a custom_jvp that has nondiff_argnums."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def f(n, x):
    return x**n


f.defjvps(lambda t, ans, n, x: n * x ** (n - 1) * t)
