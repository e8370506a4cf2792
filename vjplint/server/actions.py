"""What the server's code actions edit, as plain functions (no pygls): testable on their own.

Edits use vjplint's positions (1-based rows, 1-based code-point columns); the server converts
them to LSP ranges with `vjplint.output.lsp`.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence

from vjplint.diagnostics import Diagnostic, Edit, Position
from vjplint.syntax.noqa import NOQA
from vjplint.fixes.noqa import noqa_edit  # noqa: F401 - the server's "Disable VJPxxx" edit
from vjplint.syntax.positions import lines_with_endings

_CODE_AT = re.compile(r"[A-Za-z]+[0-9]+")


def lines_keepends(text: str) -> List[str]:
    """LSP lines with their line endings; the last one (possibly empty) has none."""
    lines = lines_with_endings(text)
    return lines + [""] if not lines or lines[-1].endswith(("\n", "\r")) else lines


def whole_text_edit(old: str, new: str) -> Optional[Edit]:
    """One edit turning `old` into `new`, spanning only the lines that differ."""
    if old == new:
        return None
    a, b = lines_keepends(old), lines_keepends(new)
    prefix = 0
    while prefix < min(len(a), len(b)) - 1 and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    content = "".join(b[prefix:len(b) - suffix])
    if suffix:
        end = Position(len(a) - suffix + 1, 1)
    else:  # up to the end of the document
        end = Position(len(a), len(a[-1]) + 1)
    return Edit(content, Position(prefix + 1, 1), end)


def overlaps(d: Diagnostic, start: Position, end: Position) -> bool:
    return d.location <= end and start <= d.end_location


def kind_wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """LSP code action kinds are hierarchical: asking for `source.fixAll` gets `source.fixAll.vjplint`."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def noqa_code_at(line: str, column: int) -> Optional[str]:
    """The rule code under 0-based code-point `column` inside the line's `# noqa:` comment."""
    match = NOQA.search(line)
    if match is None or not match.group("codes"):
        return None
    for code in _CODE_AT.finditer(line, match.start("codes"), match.end("codes")):
        if code.start() <= column <= code.end():
            return code.group().upper()
    return None
