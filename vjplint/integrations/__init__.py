"""Other tools' entry points (flake8).

May import: project, lint and everything below them.
"""
