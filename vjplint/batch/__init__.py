"""Linting many files fast: the byte prefilter, the result cache, the replay of unchanged runs,
the os/sys-only pre-commit answer, and worker processes. Nothing here knows rules or formats.

May import: fixes, project, lint and everything below them (never output/, cli/ or server/).
"""
