"""E14: an array in a custom_vjp nondiff_argnums slot, traced under jit."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w


def f_fwd(x, w):
    return f(x, w), x


def f_bwd(w, x, g):
    return (jnp.cos(x) * w * g,)


f.defvjp(f_fwd, f_bwd)
jax.jit(f)(1.0, jnp.float32(2.0))
