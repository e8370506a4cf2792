"""`# noqa: CODE` comments: the edit that adds one code to a line (the server's "Disable VJPxxx for
this line") and `--add-noqa`'s whole-file pass over the current findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from vjplint.diagnostics import Diagnostic
from vjplint.syntax.noqa import NOQA, apply_line_edit, noqa_edit, parse_noqa  # noqa: F401 - read from here too
from vjplint.syntax.positions import source_lines

@dataclass
class NoqaResult:
    text: str
    added: int = 0  # lines whose noqa comment was created or extended
    unsuppressible: List[Diagnostic] = field(default_factory=list)  # no comment can silence these


def add_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> NoqaResult:
    """`text` with a `# noqa: CODE[, CODE]` on each finding's `noqa_row`, merged into the comment
    already there. A finding without a noqa row (a syntax error, an invalid noqa) or on a line where
    no comment can go (inside a string, a backslash continuation) is returned, not silenced."""
    result = NoqaResult(text)
    by_row: Dict[int, List[Diagnostic]] = {}
    for d in diagnostics:
        if d.noqa_row is None:
            result.unsuppressible.append(d)
        else:
            by_row.setdefault(d.noqa_row, []).append(d)
    lines = source_lines(text)
    for row in sorted(by_row):
        changed = False
        for code in sorted({d.code for d in by_row[row]}):
            edit = noqa_edit(result.text, lines, row, code)
            if edit is None:
                if not _covers(lines, row, code):
                    result.unsuppressible.extend(d for d in by_row[row] if d.code == code)
                continue
            result.text = apply_line_edit(result.text, edit)
            lines = source_lines(result.text)
            changed = True
        result.added += changed
    return result


def _covers(lines: Sequence[str], row: int, code: str) -> bool:
    parsed = parse_noqa(lines[row - 1]) if 0 < row <= len(lines) else None
    return parsed is not None and (parsed[0] is None or (code in parsed[0] and not parsed[2]))
