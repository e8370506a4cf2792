"""`vjplint server`: the Language Server over stdio (pygls, from the `lsp` extra).

May import: gradcheck, verify, batch, output, fixes, project, lint and everything below them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence
from vjplint.server.lint_helper import LintHelper
from vjplint.install_hint import install_hint

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

    # Started first: it imports the engine on another core while this process imports pygls.
    helper = LintHelper.start()
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        print(MISSING_EXTRA.format(missing=f"no module named {exc.name!r}", hint=install_hint("lsp")), file=sys.stderr)
        if helper is not None:
            helper.stop()
        return 2
    if args.log_file:
        import logging

        logging.basicConfig(filename=args.log_file, level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    else:
        _log_to_stderr_in_one_line()
    from vjplint.server.lsp_server import create_server

    _exit_when_orphaned(parent)
    server = create_server(debounce_ms=args.debounce_ms, helper=helper)
    _freeze_startup_objects()
    code = 1
    try:
        code = server.start_io()  # returns at `exit` or when the client closes stdin
    finally:
        # Do not wait for a lint or a fix still running in the worker thread: nobody will read
        # its answer (an editor that quit mid-request once left the server computing for minutes).
        _exit_now(code)
    return code


def _log_to_stderr_in_one_line() -> None:
    """Warnings on stderr (what an editor shows as the server's output), one line each: a client
    that sends a malformed message gets a line saying so, never a traceback (`--log-file` keeps
    the tracebacks). pygls' own account of a message it could not decode repeats ours."""
    import logging

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            text = record.getMessage().strip().splitlines()
            return f"vjplint server: {record.levelname.lower()}: {text[0] if text else ''}"[:500]

    def wanted(record: logging.LogRecord) -> bool:
        return not (record.name.startswith("pygls") and str(record.msg).startswith(PYGLS_REPEATS))

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine())
    handler.addFilter(wanted)
    handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


# pygls' lines about a message vjplint's reader also reports, or answers with an error
PYGLS_REPEATS = ("Unable to deserialize message", "Failed to handle request", "Exception occurred for message",
                 "Failed to handle notification")


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
