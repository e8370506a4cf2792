"""`vjplint server`: the Language Server over stdio (pygls, from the `lsp` extra)."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

MISSING_EXTRA = ("vjplint server needs the `lsp` extra, which is not installed ({missing}).\n"
                 "Install it with:  {hint}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="vjplint server",
                                     description="Run the vjplint Language Server over stdio.")
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default; for "
                        "editors that always pass it)")
    parser.add_argument("--log-file", default=None, help="write the server's log to this file")
    parser.add_argument("--debounce-ms", type=int, default=None,
                        help="wait this long after an edit before linting (default: 30)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        from vjplint.install_hint import install_hint

        print(MISSING_EXTRA.format(missing=f"no module named {exc.name!r}", hint=install_hint("lsp")), file=sys.stderr)
        return 2
    if args.log_file:
        import logging

        logging.basicConfig(filename=args.log_file, level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from vjplint.server.lsp_server import create_server

    server = create_server(debounce_ms=args.debounce_ms)
    server.start_io()
    return 0
