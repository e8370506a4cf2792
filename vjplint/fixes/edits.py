"""Edits on text: offsets of positions, applying non-overlapping edits, and the small edits
that turn one text into another. The one edit applier the fix loop, the CLI and the server use."""

from __future__ import annotations

import bisect
import difflib
import os
from typing import List, Sequence, Tuple

from vjplint.diagnostics import Edit, Position
from vjplint.syntax.positions import lines_with_endings as split_lines


def line_starts(text: str) -> List[int]:
    starts, offset = [0], 0
    for line in split_lines(text):
        offset += len(line)
        starts.append(offset)
    return starts


def offset(text: str, starts: List[int], position: Position) -> int:
    """The character offset of `position` in `text`. A column may point inside its line's break
    (diff_edits makes such positions for `\r\n`), never past it into the next line; a row past
    the end means the end of the text."""
    row = min(max(position.row, 1), len(starts))
    end_of_row = starts[row] if row < len(starts) else len(text)
    return min(starts[row - 1] + max(position.column - 1, 0), end_of_row)


def position_at(starts: List[int], offset: int) -> Position:
    row = bisect.bisect_right(starts, offset) - 1
    row = min(row, len(starts) - 1)
    return Position(row + 1, offset - starts[row] + 1)


def diff_edits(old: str, new: str) -> Tuple[Edit, ...]:
    """Small edits turning `old` into `new`: changed line blocks, trimmed to the changed characters."""
    if old == new:
        return ()
    a, b = split_lines(old), split_lines(new)
    starts = line_starts(old)
    # Diff only the changed middle: SequenceMatcher is quadratic, and a fix touches a few
    # custom_vjp families in what may be a very large file.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail], autojunk=True)
    edits = []
    for tag, i1, i2, j1, j2 in middle.get_opcodes():
        if tag == "equal":
            continue
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        prefix = len(os.path.commonprefix([before, after]))
        limit = min(len(before), len(after)) - prefix
        suffix = 0
        while suffix < limit and before[-1 - suffix] == after[-1 - suffix]:
            suffix += 1
        start = starts[i1] + prefix
        end = starts[i1] + len(before) - suffix
        edits.append(Edit(after[prefix:len(after) - suffix], position_at(starts, start), position_at(starts, end)))
    return tuple(edits)


def spans(text: str, starts: List[int], edits: Sequence[Edit]) -> List[Tuple[int, int, str]]:
    return [(offset(text, starts, e.location), offset(text, starts, e.end_location), e.content) for e in edits]


def conflicts(span: Tuple[int, int, str], taken: Sequence[Tuple[int, int, str]]) -> bool:
    s1, e1, _ = span
    return any((s1 < e2 and s2 < e1) or s1 == s2 for s2, e2, _ in taken)


class Taken:
    """Spans accepted so far, sorted, answering `conflicts` without a scan of every one of them
    (a fix pass over a dense module accepts thousands)."""

    def __init__(self) -> None:
        self.starts: List[int] = []
        self.spans: List[Tuple[int, int, str]] = []
        self.longest = 0

    def conflicts(self, span: Tuple[int, int, str]) -> bool:
        """The same answer as `conflicts(span, every accepted span)`."""
        s1, e1, _ = span
        i = bisect.bisect_left(self.starts, s1)
        if i < len(self.starts) and (self.starts[i] == s1 or self.starts[i] < e1):
            return True
        j = i - 1  # before s1: only spans that reach past s1 conflict, and none starts earlier than this
        while j >= 0 and self.starts[j] >= s1 - self.longest:
            if self.spans[j][1] > s1:
                return True
            j -= 1
        return False

    def add(self, span: Tuple[int, int, str]) -> None:
        i = bisect.bisect_right(self.starts, span[0])
        self.starts.insert(i, span[0])
        self.spans.insert(i, span)
        self.longest = max(self.longest, span[1] - span[0])


def apply_spans(text: str, spans: Sequence[Tuple[int, int, str]]) -> str:
    """`text` with non-overlapping spans replaced, in one join (slicing the whole text once per
    span was quadratic)."""
    pieces: List[str] = []
    at = len(text)
    for start, end, content in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        pieces.append(text[end:at])
        pieces.append(content)
        at = start
    pieces.append(text[:at])
    return "".join(reversed(pieces))


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with the non-overlapping `edits` (given in its own positions) applied."""
    return apply_spans(text, spans(text, line_starts(text), edits))
