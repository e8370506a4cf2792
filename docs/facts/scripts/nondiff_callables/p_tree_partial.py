import functools
from functools import partial
import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)


def apply_fwd(fn, x):
    return fn(x), x


def apply_bwd(fn, x, g):
    return jax.vjp(fn, x)[1](g)


apply.defvjp(apply_fwd, apply_bwd)

def scaled(c, v):
    return c * jnp.sin(v)


def loss(c, x):
    return jnp.sum(apply(jax.tree_util.Partial(scaled, c), x))


def trigger():
    return jax.grad(loss)(2.0, jnp.ones(3))
