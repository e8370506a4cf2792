"""The cli layer: the real CLI (and other commands) in subprocesses."""
