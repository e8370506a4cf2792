"""The text model the residual-plus-None writer (`residual_text.py`) edits: a text with its lines
and `ast` positions as offsets, the file's own newline and indentation, the comments of a piece
of code, and bracketed sequences (call arguments, parameters, tuple and list elements, import
names) as items with the text between them, over one line or several, comments included.

Who owns the text between items decides where a comment goes when an item is removed or added.
As the codemod has always written it (CST whitespace ownership): after an item's comma, up to the
next item, the text is the comma's (an end-of-line comment follows its item); after the last
item, up to the closing bracket, it is the last comma's in a call or a parameter list
(`owner="comma"`) and the closing bracket's in a tuple or a list (`owner="closer"`).
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from typing import List, Optional, Sequence, Set, Tuple

import ast

from vjplint.fixes.edits import line_starts
from vjplint.syntax.positions import byte_to_char

Span = Tuple[int, int, str]  # (start, end, new text), character offsets in the original text
_NEWLINE = re.compile(r"\r\n?|\n")
_BEFORE_COMMA = re.compile(r"[ \t]*,")


class Hard(Exception):
    """This plan cannot be written exactly (its fix is not made: the code is never guessed at)."""


class Source:
    """A text with its lines and line offsets, converting `ast` positions to offsets."""

    def __init__(self, text: str, lines: Sequence[str]) -> None:
        self.text = text
        self.lines = lines
        self.starts = line_starts(text)
        found = _NEWLINE.search(text)
        self.newline = found.group(0) if found is not None else "\n"  # the file's first line ending
        self._indent: Optional[str] = None

    def at(self, row: int, byte_col: int) -> int:
        return self.starts[row - 1] + byte_to_char(self.lines[row - 1], byte_col)

    def start(self, node: ast.AST) -> int:
        return self.at(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.at(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def row_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def line_start(self, offset: int) -> int:
        return self.starts[self.row_of(offset) - 1]

    def indent(self) -> str:
        """One level of the file's indentation: its first indented block's, else four spaces."""
        if self._indent is None:
            self._indent = "    "
            try:
                for token in tokenize.generate_tokens(io.StringIO(self.text).readline):
                    if token.type == tokenize.INDENT:
                        self._indent = token.string
                        break
            except (tokenize.TokenError, SyntaxError):
                pass
        return self._indent


def comments(piece: str) -> List[str]:
    """The comments of a piece of code (an expression, or parameters, over several lines), read
    in brackets of its own so that no line break or indentation in it counts."""
    if "#" not in piece:
        return []
    found: List[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO("(" + piece + "\n)").readline):
            if token.type == tokenize.COMMENT:
                found.append(token.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        raise Hard("comments tokenize cannot read")
    return found


_BLANK_LINE = re.compile(r"[ \t]*(#[^\r\n]*)?\Z")


def blank(piece: str) -> bool:
    """Only spaces, line breaks and comments (the layout between items)."""
    return all(_BLANK_LINE.match(line) for line in _NEWLINE.split(piece))


def first_line(after_comma: str) -> Optional[str]:
    """The first line of the text after a comma, with its line ending (its spaces and comment:
    the item's end-of-line comment), or None when the text stays on the line."""
    found = _NEWLINE.search(after_comma)
    return None if found is None else after_comma[:found.end()]


def last_line(after_comma: str) -> str:
    """What follows the last line break of the text after a comma (the indentation before the next item)."""
    found = None
    for found in _NEWLINE.finditer(after_comma):
        pass
    return after_comma if found is None else after_comma[found.end():]


class Items:
    """The items of a bracketed sequence: their text, and the text after each: its comma (with
    the spaces before it) and what follows up to the next item; after the last one, up to the
    closing bracket. `lead`: the text between the opening bracket and the first item."""

    def __init__(self, source: Source, nodes: Sequence[ast.AST], after_open: int, close: int,
                 owner: str = "closer", spans: Optional[Sequence[Tuple[int, int]]] = None) -> None:
        text = source.text
        self.source = source
        self.owner = owner
        self.starts = [a for a, _ in spans] if spans is not None else [source.start(n) for n in nodes]
        self.ends = [b for _, b in spans] if spans is not None else [source.end(n) for n in nodes]
        self.close = close
        self.lead = text[after_open:self.starts[0] if self.starts else close]
        if not blank(self.lead):
            raise Hard("text before the first item")
        self.values = [text[s:e] for s, e in zip(self.starts, self.ends)]
        self.tails = [text[e:s] for e, s in zip(self.ends, [*self.starts[1:], close])]
        self.commas: List[Optional[Tuple[str, str]]] = []  # (spaces and comma, what follows), None without one
        for i, tail in enumerate(self.tails):
            m = _BEFORE_COMMA.match(tail)
            if m is None:
                if i < len(self.tails) - 1 or not blank(tail):
                    raise Hard("a separator that is not a plain comma")
                self.commas.append(None)
                continue
            rest = tail[m.end():]
            if not blank(rest):
                raise Hard("text after a comma")
            self.commas.append((m.group(0), rest))

    @property
    def multiline(self) -> bool:
        return any("\n" in t or "\r" in t for t in (self.lead, *self.tails))

    def _comma(self, i: int) -> Tuple[str, str]:
        found = self.commas[i]
        assert found is not None
        return found

    def removed(self, drop: Set[int], single_tuple: bool) -> str:
        """The text from the first item to the closing bracket with `drop` removed: a kept item
        keeps its comma and what follows it; when the last item goes, the new last item takes
        the old last one's ending (its comma if it had one, and the layout up to the closing
        bracket), keeping its own end-of-line comment where that ending breaks the line."""
        n = len(self.values)
        kept = [i for i in range(n) if i not in drop]
        out: List[str] = []
        for k, i in enumerate(kept):
            tail = self.tails[i]
            if k == len(kept) - 1 and n - 1 in drop:
                tail = self._inherited(i)
            if k == len(kept) - 1 and single_tuple and len(kept) == 1 and self.commas[n - 1 if n - 1 in drop else i] is None:
                tail = "," + tail
            out.append(self.values[i] + tail)
        return "".join(out)

    def _inherited(self, own: int) -> str:
        last = self.commas[-1]
        if last is None:
            return self.tails[-1]
        before, after = last
        if self.owner == "comma" and first_line(after) is not None:
            mine = self.commas[own]
            line = first_line(mine[1]) if mine is not None else None
            after = (line if line is not None else self.source.newline) + last_line(after)
        return before + after

    def inserted(self, inserts: Sequence[int], value: str = "None") -> Tuple[str, bool]:
        """The text from the first item to the closing bracket with `value` inserted before each
        old index of `inserts` (ascending; `n` appends). New separators copy the sequence's first
        one without its comment (or, with one item over several lines, the opening bracket's
        layout); a trailing comma stays when there was one on several items or lines; the old
        last item's end-of-line comment stays on its line. Returns the text and whether the
        closing bracket's first line (a comment) moved onto the old last item's line."""
        assert self.owner == "closer"
        n = len(self.values)
        trailing = self.commas[-1] if n else None
        multiline = self.multiline
        if n > 1:
            comma, after = self._comma(0)
            after = after if first_line(after) is None else self.source.newline + last_line(after)
        elif multiline and ("\n" in self.lead or "\r" in self.lead):  # the opening's layout, its comments not copied
            comma, after = ",", self.source.newline + last_line(self.lead)
        else:
            comma, after = ",", " "
        template = comma + after
        keep_trailing = trailing is not None and (n > 1 or multiline)
        plain_trailing = trailing[0] if trailing is not None else ""
        sequence: List[Tuple[str, int]] = []
        pending = list(inserts)
        k = 0
        for i in range(n + 1):
            while k < len(pending) and pending[k] == i:
                sequence.append(("new", i))
                k += 1
            if i < n:
                sequence.append(("old", i))
        out: List[str] = []
        moved_comment = False
        close_tail = ""  # the closing bracket's text (after the last comma, or the last item)
        if n:
            close_tail = trailing[1] if trailing is not None else self.tails[-1]
        for position, (kind, i) in enumerate(sequence):
            last = position == len(sequence) - 1
            if kind == "old":
                if last:
                    ending = plain_trailing if keep_trailing else ""
                elif i < n - 1:
                    ending = self.tails[i]
                else:
                    ending = template  # the old last item: a separator now
                out.append(self.values[i] + ending)
            else:
                out.append(value + ((plain_trailing if keep_trailing else "") if last else template))
        if n and sequence[-1][0] == "new":
            closing = first_line(close_tail)
            old_last = sequence.index(("old", n - 1))
            own = first_line(after)
            if closing is not None and closing.strip(" \t\r\n").startswith("#") and own is not None:
                # `(..., g,  # d/db\n)`: the comment stays on `g`'s line when values are appended
                out[old_last] = self.values[n - 1] + comma + closing + after[len(own):]
                moved_comment = True
        return "".join(out) + self._closing(close_tail, moved_comment), moved_comment

    def _closing(self, close_tail: str, moved: bool) -> str:
        if not moved:
            return close_tail
        line = first_line(close_tail) or ""
        return self.source.newline + close_tail[len(line):]
