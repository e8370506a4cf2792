"""An editor's incremental change applied to a big document without splitting it into lines.

pygls applies `textDocument/didChange` by splitting the whole text into lines (twice, with our
range check) and writing every line again: on the event loop, half a second for a one-character
edit of a 10 MB document on a busy machine, during which no other request is answered. Here the
change's two positions are found by counting line breaks in C (`str.count`, a block at a time)
and the text is cut and joined once.

`apply` returns None when it cannot do that exactly (a position past its line's end or past the
document, which the caller clamps and says so; a text breaking lines otherwise than with `\\n`
and `\\r\\n`: a lone `\\r`, or another character Python's `splitlines` breaks at, where pygls'
line numbers and LSP's may differ): the caller then applies the change as before.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # besides \n (\r: when not in \r\n)
MIN_CHARS = 100_000  # smaller documents: pygls' way (a few milliseconds)
BLOCK = 1 << 16  # line breaks are counted this many characters at a time


def plain(text: str) -> bool:
    """Whether `text` breaks lines with `\n` or `\r\n` only (then LSP's lines are pygls')."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return False
    return not any(ch in text for ch in OTHER_BREAKS[1:])


def apply(text: str, start: "Position", end: "Position", new_text: str, encoding: str,
          known_plain: bool = False) -> Optional[str]:
    """`text` with the range `start`-`end` (LSP positions in `encoding`'s units) replaced by
    `new_text`; None when a position is not within the text, or the text breaks lines otherwise
    than with `\n` and `\r\n` (`known_plain`: the caller knows it does not)."""
    if not (known_plain or plain(text)):
        return None
    first = offset(text, start.line, start.character, encoding)
    last = offset(text, end.line, end.character, encoding)
    if first is None or last is None or first > last:
        return None
    return text[:first] + new_text + text[last:]


def offset(text: str, line: int, character: int, encoding: str) -> Optional[int]:
    """The index in `text` (`plain`) of an LSP position, None when it is not within the text."""
    if line < 0 or character < 0:
        return None
    start = line_start(text, line)
    if start is None:
        return None
    stop = text.find("\n", start)
    if stop < 0:
        stop = len(text)
    elif stop > start and text[stop - 1] == "\r":
        stop -= 1
    index = _index(text[start:stop], character, encoding)
    return None if index is None else start + index


def line_start(text: str, line: int) -> Optional[int]:
    """Where line `line` (0-based) starts: line breaks counted a block at a time (in C), then
    found one by one within the last block."""
    at, seen = 0, 0
    while seen + (here := text.count("\n", at, at + BLOCK)) < line:
        if at + BLOCK >= len(text):
            return None
        seen += here
        at += BLOCK
    for _ in range(line - seen):
        at = text.find("\n", at) + 1
    return at


def _index(line: str, units: int, encoding: str) -> Optional[int]:
    """The index of the character `units` code units into `line` (None: past its end or inside
    a character)."""
    if line.isascii() or encoding == "utf-32":
        return units if units <= len(line) else None
    width = (lambda ch: len(ch.encode("utf-8"))) if encoding == "utf-8" else \
        (lambda ch: 2 if ord(ch) > 0xFFFF else 1)
    counted = 0
    for index, ch in enumerate(line):
        if counted == units:
            return index
        counted += width(ch)
        if counted > units:
            return None
    return len(line) if counted == units else None


class Position:  # the shape `apply` reads (lsprotocol's Position has it)
    line: int
    character: int


class Lines(Sequence[str]):
    """A big text's lines as `source_lines` gives them (a text without `\\r`), each found when
    asked (counting from the start: for a few lines, as a few diagnostics read): the diagnostics
    of a 10 MB document read a few of its 460,000 lines, and splitting it holds the interpreter
    for a fifth of a second on a busy machine."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = 0 if not text else text.count("\n") + (0 if text.endswith("\n") else 1)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Any:
        lines = self.text.split("\n")
        return iter(lines[:self.size])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(index)
        start = line_start(self.text, index)
        assert start is not None
        stop = self.text.find("\n", start)
        return self.text[start:stop if stop >= 0 else len(self.text)]
