"""Pure libcst `Module -> Module` fixes; the runner in `apply.py` does the I/O."""
