"""E63: `@jax.jit` stacked above `@jax.custom_vjp`: the name holds the jitted function, which has no
`defvjp` (the same with checkpoint, vmap, grad... as `'function' object has no attribute`)."""
import jax
import jax.numpy as jnp


@jax.jit
@jax.custom_vjp
def f(x):
    return jnp.sin(x)


f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
