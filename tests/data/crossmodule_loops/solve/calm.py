"""Look-alikes: the imported while_loop helpers see only primals (the tangent scales the result
after the loop), and the tangent goes through a static fori_loop helper."""
import jax
import jax.numpy as jnp

from solve.iterative import fixed_point, neumann, settle_then_scale


@jax.custom_jvp
def settled(a):
    return settle_then_scale(lambda y: 0.5 * a * jnp.cos(y), jnp.zeros_like(a), 1.0)


@settled.defjvp
def settled_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y = settled(a)
    slope = jnp.cos(y) / (2.0 + a * jnp.sin(y))
    return y, settle_then_scale(lambda v: v, slope, da)


@jax.custom_jvp
def root(a):
    return fixed_point(lambda y: 0.5 * a * jnp.cos(y), jnp.zeros_like(a))


@root.defjvp
def root_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y = root(a)
    gain = fixed_point(lambda g: 0.5 * jnp.cos(y) - 0.5 * a * jnp.sin(y) * g, jnp.zeros_like(a))
    return y, gain * da


@jax.custom_jvp
def series_root(a):
    return root(a)


@series_root.defjvp
def series_root_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y = root(a)
    return y, neumann(lambda d: -0.5 * a * jnp.sin(y) * d, 0.5 * da * jnp.cos(y))
