"""E41: a closure_convert-ed function called with another argument structure than its example."""
import jax
import jax.numpy as jnp


def g(x):
    return jnp.sin(x[0]) * x[1]


conv, consts = jax.closure_convert(g, (1.0, 2.0))
conv((1.0, 2.0, 3.0), *consts)
