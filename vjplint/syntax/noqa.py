"""`# noqa` comments as text: reading one (`parse_noqa`) and the edit that adds a code to a line
(`noqa_edit`, kept only where the program stays the same). The engine applies suppressions with
these; fixes and the server add codes with them."""

from __future__ import annotations

import ast
import re
from typing import Optional, Sequence, Set, Tuple

from vjplint.diagnostics import Edit, Position
from vjplint.settings.redirects import redirected
from vjplint.syntax.positions import lines_with_endings

NOQA = re.compile(r"#\s*noqa(?P<sep>\s*:\s*|\s+)?(?P<codes>[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*)?", re.IGNORECASE)
CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_CODE_AT = re.compile(r"[A-Za-z]+[0-9]+")


def parse_noqa(line: str) -> Optional[Tuple[Optional[Set[str]], int, bool]]:
    """(codes or None for a bare noqa, column, malformed) for a line's `# noqa` comment."""
    if "noqa" not in line.lower():
        return None
    match = NOQA.search(line)
    if match is None:
        return None
    codes_text = match.group("codes")
    sep = match.group("sep") or ""
    if codes_text is None:
        return None, match.start(), False
    codes = {redirected(c.upper()) for c in CODE.findall(codes_text)}  # `# noqa: OLD` covers a merged code's new one
    return codes, match.start(), ":" not in sep


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
