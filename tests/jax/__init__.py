"""The jax layer: imports or runs JAX (verify, check-grads, ground truth, fixes on JAX)."""
