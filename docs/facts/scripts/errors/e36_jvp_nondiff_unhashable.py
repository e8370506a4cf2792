"""E36: an unhashable value (a list) in a custom_jvp nondiff slot, under jit."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def f(scales, x):
    return jnp.sin(x) * scales[0]


@f.defjvp
def f_jvp(scales, primals, tangents):
    (x,), (t,) = primals, tangents
    return f(scales, x), jnp.cos(x) * scales[0] * t


jax.jit(lambda x: f([2.0], x))(1.0)
