"""E60: grad through equinox.internal.nondifferentiable."""
import equinox.internal as eqxi
import jax
import jax.numpy as jnp

jax.grad(lambda x: jnp.sin(eqxi.nondifferentiable(x)))(jnp.float32(1.0))
