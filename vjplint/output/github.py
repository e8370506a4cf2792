"""GitHub Actions workflow commands: one annotation per diagnostic.

`::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=VJP101 (nondiff-array)::message`
(`title=VJP101 (nondiff-array) in cell 3` for a notebook, whose rows count in the cell),
escaped as GitHub's toolkit escapes them (`%`, CR and LF everywhere; `:` and `,` in
property values too), so a message or a path can never end the command early.
"""

from __future__ import annotations

from typing import List

from vjplint.diagnostics import Diagnostic, Severity
from vjplint.output import OutputContext

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic) -> str:
    properties = [
        ("file", d.filename.replace("\\", "/")),
        ("line", str(d.location.row)),
        ("col", str(d.location.column)),
        ("endLine", str(d.end_location.row)),
        ("endColumn", str(d.end_location.column)),
        ("title", f"{d.code} ({d.name})" + (f" in cell {d.cell}" if d.cell is not None else "")),
    ]  # a notebook's rows count in its cell: the title says which (GitHub has no cell field)
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{COMMAND[d.severity]} {props}::{escape_data(d.message)}"


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    return "".join(annotation(d) + "\n" for d in diagnostics)
