"""E65: `@jax.jit` beneath the creator: JAX calls the jitted primal with every argument, and jit
traces the nondiff function passed in position 0."""
from functools import partial

import jax


@partial(jax.custom_jvp, nondiff_argnums=(0,))
@jax.jit
def integrate(f, a, b):
    return (b - a) * (f(a) + f(b)) / 2


integrate.defjvp(lambda f, p, t: (integrate(f, *p), t[1] - t[0]))
integrate(jax.numpy.sin, 0.0, 1.0)
