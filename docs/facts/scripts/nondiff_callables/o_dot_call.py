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

def loss(W, x):
    return jnp.sum(apply(lambda v: jnp.dot(W, v), x))


def trigger():
    return jax.grad(loss)(jnp.eye(3), jnp.ones(3))
