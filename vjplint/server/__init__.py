"""`vjplint server`: the Language Server over stdio (pygls, from the `lsp` extra).

May import: gradcheck, verify, batch, output, fixes, project, lint and everything below them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

MISSING_EXTRA = ("vjplint server needs the `lsp` extra, which is not installed ({missing}).\n"
                 "Install it with:  {hint}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    import os

    parent = os.getppid()  # before the imports below, which take seconds on a busy machine
    parser = argparse.ArgumentParser(prog="vjplint server",
                                     description="Run the vjplint Language Server over stdio.")
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default; for "
                        "editors that always pass it)")
    parser.add_argument("--log-file", default=None, help="write the server's log to this file")
    parser.add_argument("--debounce-ms", type=int, default=None,
                        help="wait this long after an edit before linting (default: 0; edits made while a lint runs coalesce)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    from vjplint.server.lint_helper import LintHelper

    # Started first: it imports the engine on another core while this process imports pygls.
    helper = LintHelper.start()
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        from vjplint.install_hint import install_hint

        print(MISSING_EXTRA.format(missing=f"no module named {exc.name!r}", hint=install_hint("lsp")), file=sys.stderr)
        if helper is not None:
            helper.stop()
        return 2
    if args.log_file:
        import logging

        logging.basicConfig(filename=args.log_file, level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from vjplint.server.lsp_server import create_server

    _exit_when_orphaned(parent)
    server = create_server(debounce_ms=args.debounce_ms, helper=helper)
    _freeze_startup_objects()
    try:
        server.start_io()  # returns at `exit` or when the client closes stdin
    finally:
        # Do not wait for a lint or a fix still running in the worker thread: nobody will read
        # its answer (an editor that quit mid-request once left the server computing for minutes).
        _exit_now(0)
    return 0


def _freeze_startup_objects() -> None:
    """Move what the imports made (lsprotocol's thousand classes, the rules) out of the cyclic
    collector's sight: it lives as long as the server, and every collection would scan it again
    (a third of the first lint's warm-up, measured). The warm-up freezes the engine's too."""
    import gc

    gc.freeze()  # without a collection first: it costs 18 ms and finds a few hundred objects


def _exit_now(code: int) -> None:
    import logging
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
    finally:
        os._exit(code)


def _exit_when_orphaned(parent: int, period_s: float = 1.0) -> None:
    """End the server when the editor that started it (`parent`) is gone (its parent process
    changes), even if the pipe stays open because another process inherited it."""
    import os
    import threading

    if parent <= 1:
        return  # started by init (a service manager): there is no editor to outlive

    def watch() -> None:
        import time

        while True:
            time.sleep(period_s)
            if os.getppid() != parent:
                _exit_now(0)

    threading.Thread(target=watch, name="vjplint-parent-watch", daemon=True).start()
