"""Applying fixes: the edits of a diagnostic's fix or plan (apply.py), noqa comments, the
residual-plus-None writer, cross-module rewrites written together or not at all.

May import: project, lint and everything below them.
"""
