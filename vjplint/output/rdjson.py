"""reviewdog's Diagnostic Format, `rdjson` (a `DiagnosticResult`): `reviewdog -f=rdjson` posts the
findings as review comments and the fixes as suggested changes.

reviewdog counts columns in UTF-8 bytes (vjplint counts code points) and ranges end exclusively,
as vjplint's do. Safe fixes become `suggestions`; unsafe ones only with --unsafe-fixes. rdjson has
no notebook cells: a notebook's finding says its cell in the message, its rows count in that cell,
and its fixes (edits of the notebook's Python text) are not suggested.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

from vjplint.diagnostics import Applicability, Diagnostic, Position, Severity
from vjplint.output import OutputContext
from vjplint.links import docs_home

SEVERITY = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}


def _position(lines: Sequence[str], p: Position) -> Dict[str, int]:
    """A code-point column as a 1-based UTF-8 byte column."""
    line = lines[p.row - 1] if 0 < p.row <= len(lines) else ""
    head = line[:p.column - 1]
    column = len(head.encode("utf-8", "surrogatepass")) + max(p.column - 1 - len(line), 0) + 1
    return {"line": p.row, "column": column}


def _range(lines: Sequence[str], start: Position, end: Position) -> Dict[str, Any]:
    return {"start": _position(lines, start), "end": _position(lines, end)}


def diagnostic(d: Diagnostic, ctx: OutputContext) -> Dict[str, Any]:
    lines: Sequence[str] = ctx.lines_of(d)  # a notebook's: its cell's lines (rows count in the cell)
    out: Dict[str, Any] = {
        "message": d.message if d.cell is None else f"cell {d.cell}: {d.message}",
        "location": {"path": d.filename, "range": _range(lines, d.location, d.end_location)},
        "severity": SEVERITY[d.severity],
        "code": {"value": d.code, "url": ctx.url(d.code)},
    }
    fix = d.fix
    if fix is not None and fix.edits and (fix.applicability is Applicability.SAFE or ctx.unsafe_fixes) \
            and d.cell is None:  # a notebook's edits are on its Python text, not the file's lines
        out["suggestions"] = [{"range": _range(lines, e.location, e.end_location), "text": e.content}
                              for e in fix.edits]
    return out


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    result = {
        "source": {"name": "vjplint", "url": docs_home(ctx.docs_url)},
        "diagnostics": [diagnostic(d, ctx) for d in diagnostics],
    }
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
