"""`vjplint check --watch PATH...`: check (or, with --fix, fix) again whenever a file changes.

Built on watchfiles (the `watch` extra), imported only here. As ruff does: the screen is cleared
(on a terminal), "Starting linter in watch mode..." and the report, then "[HH:MM:SS] Watching for
file changes." after each run; a change to a Python file, a notebook or a pyproject.toml under
the paths starts the next run ("File change detected..."), with settings read afresh. Ctrl-C ends
it. Each run's output goes where the run's would (--output-file too).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, List

from vjplint.errors import UsageError
from vjplint.install_hint import install_hint

WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb")
CLEAR = "\033[2J\033[3J\033[H"  # clear the screen and its scroll-back, cursor home


def watched(path: str) -> bool:
    """The changes that start a new run: Python files, notebooks, configuration and .gitignore,
    not the result cache's own writes."""
    name = os.path.basename(path)
    if ".vjplint_cache" in path.split(os.sep) or name.endswith(".vjplint-tmp"):
        return False
    return name.endswith(WATCHED_SUFFIXES) or name in ("pyproject.toml", ".gitignore")


def run_watch(args, argv: List[str], paths: List[str], output_format: str, run_once: Callable[[], int]) -> int:
    try:
        import watchfiles
    except ImportError:
        raise UsageError("--watch needs the watchfiles package: "
                         f"{install_hint('vjplint[watch]')}") from None
    roots = [os.path.abspath(p) for p in paths]
    missing = [p for p, r in zip(paths, roots) if not os.path.exists(r)]
    if missing:
        raise UsageError(f"--watch: no such file or directory: {', '.join(missing)}")
    terminal = sys.stdout.isatty()

    def one_run(headline: str) -> None:
        if terminal:
            sys.stdout.write(CLEAR)
        sys.stdout.write(headline + "\n")
        sys.stdout.flush()
        try:
            run_once()
        except UsageError as exc:  # a pyproject.toml broken meanwhile: said, and the watch goes on
            print(f"vjplint: error: {exc}", file=sys.stderr)
        sys.stdout.write(f"[{time.strftime('%H:%M:%S')}] Watching for file changes.\n")
        sys.stdout.flush()

    changes = watchfiles.watch(*roots, watch_filter=lambda _change, path: watched(path), raise_interrupt=False,
                               debounce=300, step=50, yield_on_timeout=True, rust_timeout=200)
    next(changes, None)  # the watcher is set up (its first timeout): a change made during the first run counts
    one_run("Starting linter in watch mode...")
    for changed in changes:
        if changed:
            one_run("File change detected...")
    return 0
