"""E48: jax.custom_vjp on an instance method (custom_vjp objects have no __get__)."""
import jax
import jax.numpy as jnp


class Layer:
    @jax.custom_vjp
    def apply(self, x):
        return jnp.sin(x)


Layer().apply(1.0)
