"""Linting one file: the engine (prefilter, regions, model, rules, noqa) and the server's incremental re-lint.

May import: rules and everything below them.
"""
