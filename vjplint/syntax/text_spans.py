"""Where a module's text is not code, found without parsing: its triple-quoted strings and its
comments. `vjplint.syntax.region_parse` splits a module into statements around the strings;
`vjplint.syntax.regions` reads a statement's words from its code only (a word in a docstring or a
comment names nothing the statement uses).
"""

from __future__ import annotations

import functools
import os.path
import re
from bisect import bisect_right
from typing import Dict, Iterable, List, Optional, Set, Tuple, TypeVar

Span = Tuple[int, int]

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Code on one line up to a comment, a triple quote or its end: single-quoted strings whole.
LINE_CODE = re.compile(r"""(?:[^#"'\\\n]+|\\.|"(?!"")(?:[^"\\\n]|\\.)*"|'(?!'')(?:[^'\\\n]|\\.)*')*""")


def string_spans(text: str) -> Optional[List[Span]]:
    """The [start, end) offsets of the triple-quoted strings, in order; None when one is not
    closed or a single-quoted string runs on past its line. A triple quote in a comment or in a
    single-quoted string opens none; an escaped one closes none. (`TextIndex` keeps the answer
    for the several steps of one lint that ask of the same text.)"""
    return _string_spans(text)


def occurrences(text: str, names: Iterable[str]) -> Dict[str, List[int]]:
    """Where each name starts in `text`, overlapping occurrences included, in order: the
    names are rare, so a literal search of the whole text each beats a search per statement."""
    key = tuple(names)
    found: Dict[str, List[int]] = {n: [] for n in key}
    for needle, group in prefix_groups(key):  # `custom_` once for four of the default names
        i = text.find(needle)
        while i >= 0:
            for n in group:
                if text.startswith(n, i):
                    found[n].append(i)
            i = text.find(needle, i + 1)
    return found


class TextIndex:
    """What the searches of one text found, kept for the steps of one lint that ask of it (the
    split parse, the regions, the engine's trigger check): the strings' spans and the names'
    occurrences, each found once. The engine makes one per lint and hands it down; a step given
    none, or one of another text, searches for itself. Nothing is kept between lints."""

    __slots__ = ("text", "_strings", "_names", "_found")

    def __init__(self, text: str) -> None:
        self.text = text
        self._strings: Optional[Tuple[Optional[List[Span]]]] = None
        self._names: Optional[Tuple[str, ...]] = None
        self._found: Dict[str, List[int]] = {}

    def strings(self) -> Optional[List[Span]]:
        if self._strings is None:
            self._strings = (_string_spans(self.text),)
        return self._strings[0]

    def occurrences(self, names: Iterable[str]) -> Dict[str, List[int]]:
        key = tuple(names)
        if self._names != key:
            self._found, self._names = occurrences(self.text, key), key
        return self._found

    @staticmethod
    def of(text: str, index: "Optional[TextIndex]") -> "TextIndex":
        """`index` when it is this text's, else a new one."""
        return index if index is not None and index.text is text else TextIndex(text)


def _string_spans(text: str) -> Optional[List[Span]]:
    spans: List[Span] = []
    pos = 0  # outside any string
    # The next `"""` and `'''` at or after `pos` (-1: none left), found with str.find: a regex
    # alternation of the two scans the text a character at a time, four times slower.
    double = single = -2
    while True:
        if -1 < double < pos or double == -2:
            double = text.find('"""', pos)
        if -1 < single < pos or single == -2:
            single = text.find("'''", pos)
        if double < 0 and single < 0:
            return spans
        at = double if single < 0 or 0 <= double < single else single
        code = LINE_CODE.match(text, max(text.rfind("\n", 0, at) + 1, pos)).end()  # type: ignore[union-attr]
        if code > at:  # inside a single-quoted string
            pos = code
            continue
        if code < at:
            if text[code] != "#":
                return None  # a string this line does not close
            newline = text.find("\n", at)
            if newline < 0:
                return spans
            pos = newline
            continue
        quote = text[at:at + 3]
        close = text.find(quote, at + 3)
        while close >= 0 and _escaped(text, close):
            close = text.find(quote, close + 1)
        if close < 0:
            return None
        spans.append((at, close + 3))
        pos = close + 3


def _escaped(text: str, at: int) -> bool:
    """Whether an odd number of backslashes precedes `at`."""
    k = at
    while k > 0 and text[k - 1] == "\\":
        k -= 1
    return (at - k) % 2 == 1


class CodeWords:
    """The words of a text's code between two offsets: outside its triple-quoted strings and its
    comments, but an f-string's words all kept (`f\"\"\"{x}\"\"\"` reads `x`). When the strings
    cannot be followed (`string_spans` is None), every word of the text."""

    def __init__(self, text: str, index: Optional["TextIndex"] = None) -> None:
        self.text = text
        self.strings = TextIndex.of(text, index).strings()
        self._ends = [b for _, b in self.strings] if self.strings is not None else []

    def between(self, start: int, end: int) -> Set[str]:
        text, strings = self.text, self.strings
        if strings is None:
            return set(WORD.findall(text, start, end))
        words: Set[str] = set()
        k = bisect_right(self._ends, start)  # the first string ending after `start`
        at = start
        while k < len(strings) and strings[k][0] < end:
            a, b = strings[k]
            self._code(at, max(a, at), words)
            if "f" in text[max(0, a - 2):a].lower():  # an f-string: code in braces
                words.update(WORD.findall(text, max(a, at), min(b, end)))
            at, k = b, k + 1
        if at < end:
            self._code(at, end, words)
        return words

    def _code(self, start: int, end: int, words: Set[str]) -> None:
        """Add the words of `text[start:end]` (code, no triple-quoted string in it) less its
        comments: a `#` where `LINE_CODE` ends the code of its line starts one."""
        text = self.text
        hash_at = text.find("#", start, end)
        while hash_at >= 0:
            line = max(text.rfind("\n", start, hash_at) + 1, start)
            if text.find('"', line, hash_at) < 0 and text.find("'", line, hash_at) < 0:
                code_end = hash_at  # no string before it on its line: the comment starts here
            else:
                code_end = LINE_CODE.match(text, line).end()  # type: ignore[union-attr]
            line_end = text.find("\n", hash_at, end)
            if line_end < 0:
                line_end = end
            if code_end < end and text[code_end] == "#":  # a comment, to the end of its line
                words.update(WORD.findall(text, start, code_end))
                start = line_end
            hash_at = text.find("#", line_end, end) if line_end < end else -1
        if start < end:
            words.update(WORD.findall(text, start, end))


Needle = TypeVar("Needle", str, bytes)
SHARED_PREFIX = 6  # names sharing this many first characters are searched for together


@functools.lru_cache(maxsize=64)
def prefix_groups(names: Tuple[Needle, ...]) -> Tuple[Tuple[Needle, Tuple[Needle, ...]], ...]:
    """(what to search for, the names starting with it): `names` grouped by their first
    `SHARED_PREFIX` characters (or bytes), each group searched for by its longest common prefix.
    A text is scanned once for `custom_`, not once for each of `custom_vjp`, `custom_jvp`,
    `custom_gradient` and `custom_transforms`. Empty names are left out."""
    groups: Dict[Needle, List[Needle]] = {}
    for name in dict.fromkeys(names):
        if name:
            groups.setdefault(name[:SHARED_PREFIX], []).append(name)
    return tuple((os.path.commonprefix(group), tuple(group)) for group in groups.values())  # type: ignore[misc]


# One piece of a line's code, read left to right from a point outside every string: a run of
# plain code, an escaped character, a single-quoted string (to its close or its line's end), or a `#`.
_PIECE = re.compile(r"""[^#"'\\\n]+|\\.|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|#""")
_IDENTIFIER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def mentions_in_code(text: str, names: Tuple[str, ...], extended: Tuple[str, ...] = (),
                     index: Optional["TextIndex"] = None, in_strings: Tuple[str, ...] = ()) -> bool:
    """Whether one of `names` ends an identifier (as the engine's byte prefilter counts them: not
    `custom_vjp_call_p`, but `defjvps` among `extended`) in the code of `text`, not only in its
    comments and its strings (an f-string's text counts as code, `f"{custom_vjp(f)}"`). True
    whenever the text's strings cannot be followed (`string_spans` is None) or a mention is on
    a line that a backslash continues from the one before (a string may run on there): a
    conservative answer, never False for code that names one. `in_strings`: names whose mention
    in a string counts as one in code (what a rule reads in strings: `"JVPTracer"` as a class's
    name, `"jax_use_direct_linearize"` as a setting's). Every line ending Python reads (`\\n`,
    `\\r\\n`, `\\r`) ends a line here: a text holding `\\r` is read with its line endings made
    `\\n` (a comment ends where Python's does, not at the next `\\n`)."""
    if "\r" in text:
        text, index = text.replace("\r\n", "\n").replace("\r", "\n"), None
    index = TextIndex.of(text, index)
    found = index.occurrences(names)
    if not any(found.values()):
        return False
    spans = index.strings()
    if spans is None:
        return True
    starts = [a for a, _ in spans]
    for name, where in found.items():
        longer = tuple(e for e in extended if e.startswith(name) and e != name)
        for at in where:
            end = at + len(name)
            if text[end:end + 1] in _IDENTIFIER and not any(
                    text.startswith(e, at) and text[at + len(e):at + len(e) + 1] not in _IDENTIFIER for e in longer):
                continue  # a longer identifier: not a mention (`custom_vjp_call_p`)
            where = _where(text, at, spans, starts)
            if where == _CODE or where == _STRING and name in in_strings:
                return True
    return False


_CODE, _STRING, _COMMENT = 0, 1, 2


def _where(text: str, at: int, spans: List[Span], starts: List[int]) -> int:
    """Whether offset `at` of `text` (whose triple-quoted strings are `spans`, starting at `starts`)
    lies in code (an f-string's text included), in a string or in a comment."""
    k = bisect_right(starts, at) - 1  # the last string starting at or before `at`
    if k >= 0 and at < spans[k][1]:  # inside a triple-quoted string
        a = spans[k][0]
        return _CODE if "f" in text[max(0, a - 2):a].lower() else _STRING
    line = text.rfind("\n", 0, at) + 1
    if line >= 2 and "\\" in text[max(0, line - 3):line - 1]:
        return _CODE  # continued from the line before: a string may run on here
    pos = max(line, spans[k][1]) if k >= 0 else line  # a triple-quoted string may end on this line first
    while pos < at:
        piece = _PIECE.match(text, pos)
        if piece is None:  # a line break or the text's end: not reached before `at`
            return _CODE
        if piece.group() == "#":
            return _COMMENT  # to the line's end
        if piece.end() > at:
            if text[pos] in "\"'":  # inside a single-quoted string
                return _CODE if "f" in text[max(0, pos - 2):pos].lower() else _STRING
            return _CODE
        pos = piece.end()
    return _CODE
