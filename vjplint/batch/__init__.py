"""Linting many files fast: the byte prefilter, the result cache, the replay of unchanged runs,
the os/sys-only pre-commit answer, worker processes, and the code of the dataclasses' methods
compiled once per install (class_code, which the command line installs at its start). Nothing here knows rules or formats.

May import: fixes, project, lint and everything below them (never output/, cli/ or server/).
"""
