"""Options that several commands share, defined once (`--python` of `verify` and `check-grads`)."""

from __future__ import annotations

import argparse
import os
import shutil
from typing import Optional

from vjplint.errors import UsageError

PYTHON_HELP = ("the interpreter that imports and runs the code: one with your package and JAX installed "
               "(default: [tool.vjplint.verify] python, or this one)")


def add_python_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--python", default=None, metavar="PATH", help=PYTHON_HELP)


def checked_python(value: Optional[str]) -> Optional[str]:
    """`--python`: a path to an executable, or a name found on PATH; a clear error otherwise."""
    if value is None:
        return None
    found = value if os.sep in value else shutil.which(value)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise UsageError(f"--python {value}: no such interpreter (give the path of a Python executable, "
                         f"e.g. .venv/bin/python)")
    return os.path.abspath(found)
