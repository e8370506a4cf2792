"""vjplint: a static linter and codemod tool for JAX custom_vjp / custom_jvp code."""

__version__ = "0.1.0"
