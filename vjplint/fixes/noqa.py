"""`# noqa: CODE` comments: the edit that adds one code to a line (the server's "Disable VJPxxx for
this line") and `--add-noqa`'s whole-file pass over the current findings."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from vjplint.diagnostics import Diagnostic, Edit, Position
from vjplint.lint.engine import NOQA, parse_noqa
from vjplint.syntax.positions import lines_with_endings, source_lines

_CODE_AT = re.compile(r"[A-Za-z]+[0-9]+")


def noqa_edit(text: str, lines: Sequence[str], row: int, code: str) -> Optional[Edit]:
    """Add `code` to the `# noqa:` of line `row` (creating one), or None when that is impossible
    there (a bare `# noqa` already covers it; the line ends inside a string or continues).
    `lines` are `text`'s lines without their endings."""
    if not 0 < row <= len(lines):
        return None
    line = lines[row - 1]
    parsed = parse_noqa(line)
    if parsed is None:
        body = line.rstrip()
        edit = Edit(f"  # noqa: {code}", Position(row, len(body) + 1), Position(row, len(line) + 1))
    else:
        codes, _, malformed = parsed
        if codes is None or (code in codes and not malformed):
            return None
        match = NOQA.search(line)
        assert match is not None
        merged = [c.upper() for c in _CODE_AT.findall(match.group("codes") or "")]
        merged += [] if code in merged else [code]
        edit = Edit(f"# noqa: {', '.join(merged)}", Position(row, match.start() + 1), Position(row, match.end() + 1))
    # Only a line holding a quote or a backslash can make the comment part of a string or a
    # continuation: parse those to be sure the program is unchanged.
    if any(c in line for c in "'\"\\") and not _same_program(text, apply_line_edit(text, edit)):
        return None
    return edit


def apply_line_edit(text: str, edit: Edit) -> str:
    """`text` with an edit that stays within one line (a noqa edit) applied; the line ending is kept."""
    lines = lines_with_endings(text)
    index = edit.location.row - 1
    if index >= len(lines):
        return text + edit.content
    line = lines[index]
    body = line.rstrip("\r\n")
    lines[index] = body[:edit.location.column - 1] + edit.content + body[edit.end_location.column - 1:] + line[len(body):]
    return "".join(lines)


def _same_program(old: str, new: str) -> bool:
    """A comment edit must not change the program (it would if it landed inside a string)."""
    try:
        return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


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
