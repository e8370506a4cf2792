"""The two errors a user must fix, shared by every surface (exit code 2 on the command line)."""


class ConfigError(Exception):
    """A configuration problem: an unknown key, a bad value, an unreadable pyproject.toml."""


class UsageError(Exception):
    """A bad command line."""
