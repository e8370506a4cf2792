"""The run's index: the files and settings of a run (discover, workspace), project-local wrappers,
what other modules pass to, register on and call here, and the run's modules by dotted name.

May import: lint and everything below it.
"""
