"""What pyproject.toml and the command line say (Config, the option table, the cache's file names, the
redirects of merged rule codes).

Imports nothing of vjplint but the top-level leaf modules (diagnostics, errors).
"""
