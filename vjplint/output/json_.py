"""ruff's JSON shape, so tools that read ruff's output read vjplint's."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from vjplint.diagnostics import Applicability, Diagnostic, Fix
from vjplint.output import OutputContext
from vjplint.syntax.notebook import CellMap


def _position(p: Any, cells: Any = None) -> Dict[str, int]:
    p = cells.position(p) if cells is not None else p  # a notebook's edit: its row in its cell
    return {"row": p.row, "column": p.column}


def fix_to_json(fix: Optional[Fix], cells: Any = None) -> Optional[Dict[str, Any]]:
    if fix is None or not fix.resolved:  # a plan whose edits could not be computed: not applicable
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [{"content": e.content, "location": _position(e.location, cells),
                   "end_location": _position(e.end_location, cells)}
                  for e in fix.edits],
    }


def diagnostic_to_json(d: Diagnostic, ctx: OutputContext) -> Dict[str, Any]:
    cells = None
    if d.cell is not None and d.fix is not None:  # edits are on the notebook's Python text (vjplint.syntax.notebook)

        cells = CellMap.of(ctx.sources.get(d.filename) or [])
    return {
        "cell": d.cell,
        "code": d.code,
        "end_location": _position(d.end_location),
        "filename": d.filename,
        "fix": fix_to_json(d.fix, cells),
        "location": _position(d.location),
        "message": d.message,
        "noqa_row": d.noqa_row,
        "url": ctx.url(d.code),
        "severity": d.severity.value,
        "name": d.name,
    }


def statistics(diagnostics: List[Diagnostic], ctx: OutputContext) -> List[Dict[str, Any]]:
    """ruff's `--statistics --output-format json`: one entry per rule, most frequent first, with
    `fixable_count`, how many of its findings offer a fix (unsafe ones only with --unsafe-fixes),
    and ruff's `fixable`, true when all of them do."""
    counts: Dict[str, int] = {}
    names: Dict[str, str] = {}
    fixable: Dict[str, int] = {}
    for d in diagnostics:
        counts[d.code] = counts.get(d.code, 0) + 1
        names[d.code] = d.name
        offered = d.fix is not None and (d.fix.applicability is Applicability.SAFE or ctx.unsafe_fixes)
        fixable[d.code] = fixable.get(d.code, 0) + offered
    return [{"code": code, "name": names[code], "count": n, "fixable": fixable[code] == n,
             "fixable_count": fixable[code]}
            for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    if ctx.statistics:
        return json.dumps(statistics(diagnostics, ctx), indent=2, ensure_ascii=False) + "\n"
    return json.dumps([diagnostic_to_json(d, ctx) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
