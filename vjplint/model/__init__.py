"""The module's semantic model: scopes and bindings (semantic), the JAX API tables (jaxapi),
the data types of custom derivatives (file_model), project-local wrappers, expected-error tests.

May import: syntax, settings and the top-level leaf modules.
"""
