"""LSP shapes without pygls: positions, Diagnostic objects, and the `lsp` output format.

vjplint's positions are 1-based rows and 1-based columns counted in code points; LSP's are
0-based lines and 0-based characters counted in the negotiated position encoding (UTF-16
unless the client asked otherwise). The server and `--output-format lsp` share this module,
so an editor and a CI job see the same ranges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from vjplint.diagnostics import Diagnostic, Edit, Fix, Position, Severity
from vjplint.links import DEFAULT_DOCS_URL, rule_url
from vjplint.output import OutputContext
from vjplint.syntax.positions import UTF8, UTF16, UTF32, char_to_units, source_lines, units_to_char  # noqa: F401

# LSP's DiagnosticSeverity: Error 1, Warning 2, Information 3, Hint 4.
SEVERITY = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}


def to_lsp_position(lines: Sequence[str], position: Position, encoding: str = UTF16) -> Dict[str, int]:
    line = position.row - 1
    column = max(position.column - 1, 0)
    character = char_to_units(lines[line], column, encoding) if 0 <= line < len(lines) else column
    return {"line": max(line, 0), "character": character}


def from_lsp_position(lines: Sequence[str], line: int, character: int, encoding: str = UTF16) -> Position:
    """The inverse of to_lsp_position (a character inside a surrogate pair rounds down)."""
    if not 0 <= line < len(lines) or encoding == UTF32:
        return Position(line + 1, character + 1)
    return Position(line + 1, units_to_char(lines[line], character, encoding) + 1)


def to_lsp_range(lines: Sequence[str], start: Position, end: Position, encoding: str = UTF16) -> Dict[str, Any]:
    return {"start": to_lsp_position(lines, start, encoding), "end": to_lsp_position(lines, end, encoding)}


def text_edit(lines: Sequence[str], edit: Edit, encoding: str = UTF16) -> Dict[str, Any]:
    return {"range": to_lsp_range(lines, edit.location, edit.end_location, encoding), "newText": edit.content}


def fix_data(lines: Sequence[str], fix: Optional[Fix], encoding: str = UTF16) -> Optional[Dict[str, Any]]:
    if fix is None or not fix.resolved:
        return None
    return {"applicability": fix.applicability.value, "message": fix.message,
            "edits": [text_edit(lines, e, encoding) for e in fix.edits]}


def diagnostic_to_lsp(d: Diagnostic, lines: Sequence[str], encoding: str = UTF16,
                      docs_url: str = DEFAULT_DOCS_URL) -> Dict[str, Any]:
    """An LSP `Diagnostic` as plain JSON; `data` carries what code actions need."""
    data: Dict[str, Any] = {"name": d.name, "noqa_row": d.noqa_row,
                            "fix_applicability": d.fix.applicability.value if d.fix else None}
    if d.cell is not None:  # a notebook: the range counts in this 1-based cell (vjplint.syntax.notebook)
        data["cell"] = d.cell
    if d.fix is not None and d.fix.resolved:
        data["fix"] = fix_data(lines, d.fix, encoding)
    return {
        "range": to_lsp_range(lines, d.location, d.end_location, encoding),
        "severity": SEVERITY[d.severity],
        "code": d.code,
        "codeDescription": {"href": rule_url(d.code, docs_url)},
        "source": "vjplint",
        "message": d.message,
        "data": data,
    }


def file_uri(filename: str) -> str:
    if filename == "-":
        return "untitled:stdin"
    return Path(filename).absolute().as_uri()


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    """`{file URI: [Diagnostic, ...]}`, files in the run's order."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for d in diagnostics:
        lines = ctx.lines_of(d)  # a notebook's: its cell's
        item = diagnostic_to_lsp(d, lines, docs_url=ctx.docs_url)
        if d.cell is not None:
            item["data"].pop("fix", None)  # its edits are on the notebook's Python text, not the cell's lines
        out.setdefault(file_uri(d.filename), []).append(item)
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"
