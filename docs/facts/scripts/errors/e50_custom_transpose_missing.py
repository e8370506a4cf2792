"""E50: jax.custom_transpose, an API older code used, is not in JAX 0.10.2."""
import jax

jax.custom_transpose.custom_transpose
