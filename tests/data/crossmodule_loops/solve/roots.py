"""Tangents solved by the imported while_loop helper: relatively imported, and through a module
attribute inside a helper of this module."""
import jax
import jax.numpy as jnp

from . import iterative
from .iterative import fixed_point


@jax.custom_jvp
def root(a):
    return fixed_point(lambda y: 0.5 * a * jnp.cos(y), jnp.zeros_like(a))


@root.defjvp
def root_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y = root(a)
    dy = fixed_point(lambda d: 0.5 * da * jnp.cos(y) - 0.5 * a * jnp.sin(y) * d, jnp.zeros_like(a))
    return y, dy


def solve_tangent(rhs, slope, like):
    return iterative.fixed_point(lambda d: rhs + slope * d, like)


@jax.custom_jvp
def damped(a):
    return iterative.fixed_point(lambda y: 0.25 * a * jnp.sin(y) + 0.1, jnp.zeros_like(a))


@damped.defjvp
def damped_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y = damped(a)
    return y, solve_tangent(0.25 * da * jnp.sin(y), 0.25 * a * jnp.cos(y), jnp.zeros_like(a))
