"""The pre-commit fast path: answer `vjplint [check] [FLAGS] FILE...` without the linting machinery
when none of the files can contain a finding.

Pre-commit hands vjplint the changed files, and most commits touch no custom derivative. The full
command line then spends most of its time importing argparse, pathlib and dataclasses (two to
three times Python's own start). Here only `os` and `sys` are needed: the files are read and
byte-searched for the names a finding needs, exactly as the full run does first. Anything that
could change the outcome returns None and the full command runs instead, so the output and the
exit code are always the full command's: a flag outside FLAGS, a path that is no regular file,
a candidate file, a `[tool.vjplint]` table (its aliases and its validation), an unreadable or
invalid pyproject.toml, or an output format chosen by environment variable.
"""

from __future__ import annotations

import os
import sys

# vjplint.engine.PREFILTER_NAMES (a test keeps them equal; importing the engine costs what this saves).
PREFILTER_NAMES = (b"custom_vjp", b"custom_jvp", b"JVPTracer", b"direct_linearize", b"DIRECT_LINEARIZE")
# Flags that change nothing when there is nothing to report.
FLAGS = frozenset({"--force-exclude", "--no-cache", "--exit-zero", "-q", "--quiet"})
ALL_PASSED = "All checks passed!\n"  # vjplint.output.text for no diagnostics (a test keeps it equal)


def try_check(argv: list) -> "int | None":
    """The exit code when the fast path answered (and printed), else None."""
    args = argv[1:] if argv and argv[0] == "check" else argv
    if args == ["--version"]:
        from vjplint import __version__

        sys.stdout.write(f"vjplint {__version__}\n")
        return 0
    paths = [a for a in args if a not in FLAGS]
    if not paths or any(p.startswith("-") or not p for p in paths) or os.environ.get("VJPLINT_OUTPUT_FORMAT"):
        return None
    if _configured(paths[0]):
        return None
    for path in paths:
        if not os.path.isfile(path):
            return None  # missing, a directory, a FIFO...: the full run's business
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None  # the full run reports it
        if any(name in data for name in PREFILTER_NAMES):
            return None
    if "-q" not in args and "--quiet" not in args:
        sys.stdout.write(ALL_PASSED)
        sys.stdout.flush()
    return 0


def _configured(first: str) -> bool:
    """Whether the full run would read a pyproject.toml with [tool.vjplint], or fail on one
    (vjplint.config.find_pyproject's walk, from the first path)."""
    start = os.path.realpath(first if os.path.exists(first) else os.getcwd())
    directory = start if os.path.isdir(start) else os.path.dirname(start)
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover
                import tomli as tomllib
            try:
                with open(candidate, "rb") as handle:
                    data = tomllib.load(handle)
            except (OSError, ValueError):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
                return True
            tool = data.get("tool")
            if isinstance(tool, dict) and "vjplint" in tool:
                return True
        parent = os.path.dirname(directory)
        if parent == directory:
            return False
        directory = parent
