"""Lines and columns, the one place that converts between them.

Three column units meet in vjplint: `ast` gives UTF-8 byte offsets, vjplint's own positions
(`diagnostics.Position`) count code points, 1-based, and LSP counts UTF-16 code units unless the
client negotiated otherwise. Lines are split where Python's tokenizer splits them (at \\n, \\r\\n
and \\r, never at \\f, \\x1c or \\u2028, which `str.splitlines` also breaks at and which would shift
every later row).
"""

from __future__ import annotations

import ast
import io
import re
from typing import List, Optional, Sequence, Tuple

from vjplint.diagnostics import Position

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
_LINE_WITH_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


_CODE_LINE = re.compile(r"\n(?=[^\s#])")


def column_zero_matches(pattern: "re.Pattern[str]", text: str) -> List["re.Match[str]"]:
    """What `pattern.finditer(text)` finds, for a pattern (MULTILINE) that matches only at the
    start of a line that begins with code, and ends within that line: tried only at those line
    starts, found by a literal search (finditer tries the pattern at every character)."""
    found: List["re.Match[str]"] = []
    if text[:1] and not text[0].isspace() and text[0] != "#":
        m = pattern.match(text, 0)
        if m is not None:
            found.append(m)
    for line in _CODE_LINE.finditer(text):
        m = pattern.match(text, line.end())
        if m is not None:
            found.append(m)
    return found


def source_lines(text: str) -> List[str]:
    """The lines of `text` without their endings, as Python numbers them (row N is item N-1)."""
    if "\r" not in text:  # the common case, without a StringIO and a copy per line
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        return lines
    return [line.rstrip("\r\n") for line in io.StringIO(text, newline="").readlines()]


def lines_with_endings(text: str) -> List[str]:
    """The lines of `text` with their endings; "".join() of the result is `text`."""
    return _LINE_WITH_END.findall(text)


def byte_to_char(line: str, byte_offset: int) -> int:
    """The code-point index in `line` of a UTF-8 byte offset (what `ast` col_offsets are)."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8", "surrogatepass")[:byte_offset].decode("utf-8", "replace"))


def code_units(text: str, encoding: str = UTF16) -> int:
    """The length of `text` in the encoding's code units."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def char_to_units(line: str, index: int, encoding: str = UTF16) -> int:
    """The code-unit offset of code-point `index` in `line` (past the end clamps to the end)."""
    return code_units(line[:index], encoding)


def units_to_char(line: str, units: int, encoding: str = UTF16) -> int:
    """The inverse of char_to_units (an offset inside a multi-unit character rounds down)."""
    if encoding == UTF32 or line.isascii():
        return min(units, len(line)) if units >= 0 else 0
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += code_units(char, encoding)
    return len(line)


def node_range(lines: Sequence[str], node: ast.AST, end_node: Optional[ast.AST] = None) -> Tuple[Position, Position]:
    """The 1-based row/column range of a node (to the end of `end_node` when given)."""
    last = end_node or node
    start = Position(node.lineno, column(lines, node.lineno, node.col_offset))  # type: ignore[attr-defined]
    end_row = getattr(last, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
    end_col = getattr(last, "end_col_offset", None)
    end = Position(end_row, column(lines, end_row, end_col) if end_col is not None else start.column)
    return start, end


def column(lines: Sequence[str], row: int, byte_offset: int) -> int:
    """The 1-based code-point column of an `ast` byte offset on 1-based `row`."""
    return (byte_to_char(lines[row - 1], byte_offset) if 0 < row <= len(lines) else byte_offset) + 1
