"""E64: a Python string among a custom_vjp's residuals (a flag saying which branch fwd took)."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


f.defvjp(lambda x: (jnp.sin(x), (jnp.cos(x), "fwd")), lambda r, g: (r[0] * g,))
jax.grad(f)(0.3)
