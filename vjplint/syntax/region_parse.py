"""Parse only the regions of a module that can matter, not the whole file.

`vjplint.syntax.regions.focus` keeps the statements a finding can need; most of a big candidate file
is functions it drops, and parsing them was the largest part of a cold lint. Here the text is
split into its statements without parsing (a top-level statement starts at column 0; a member
of a big class that holds a recognised name, at its body's indentation), and only what `focus`
reads the syntax of is parsed:
1. every statement except functions and classes, and the functions and classes whose text holds
   a recognised name or a `global` statement (the only ones whose inside `focus` looks at); of a
   big class holding a name, its header, its members of those kinds and its last member;
2. `focus` runs with each other function or class standing in as a stub (its name and rows);
3. the stubs it keeps are parsed, and replace their stand-ins.
Each parse is of the file's text with every other line blanked: rows and columns are the
file's own. The result is the module `focus(parse(text))` gives, node for node
(`tests/unit/test_region_parse.py` compares them with `ast.dump`, positions included).

Lines inside a triple-quoted string are text, not statements: the strings are found first
(`_string_spans`). A split this module cannot trust gives None, and the caller parses the whole
file: a line break other than `\\n`, a string it cannot follow, a parse error, or parsed
statements that straddle the split. A syntax error in a function no region needs therefore
goes unreported, as in a file the prefilter skips; one in a region is VJP900 as before.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import symtable
import sys
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from vjplint.syntax import regions
from vjplint.syntax.regions import _standing, first_line, focus
from vjplint.syntax.source import _TYPE_PARAMETERS, _parses, _without_type_parameters, paused_gc
from vjplint.syntax.text_spans import WORD, TextIndex, string_spans as _string_spans

_CODE_LINE = re.compile(r"\n(?=[^\s#)\]}])")  # a line starting with code that can start a statement
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")  # clauses of the statement above
_DEFINITION = re.compile(r"(async[ \t]+def|def|class)[ \t]+(\w+)")
# A class header on one line, its body on the next ones: only such a class is split into members.
_CLASS_HEADER = re.compile(r"class[ \t]+\w+[ \t]*(?:\([^()\n]*\))?[ \t]*:[ \t]*(?:#[^\n]*)?\n")
_BODY_LINE = re.compile(r"\n([ \t]+)(?=[^\s#])")

Statements = Dict[int, List[ast.stmt]]  # unit (or member) index -> its statements


class _Unit:
    """A statement's text: [start, end) offsets, its rows, for a function or class (decorators
    included) its kind and name, and for a class split into members, those members and where
    its header ends."""

    __slots__ = ("start", "end", "first", "last", "kind", "name", "members", "header_end", "eager", "chosen")

    def __init__(self, start: int, end: int, first: int, last: int, kind: str, name: str) -> None:
        self.start, self.end, self.first, self.last, self.kind, self.name = start, end, first, last, kind, name
        self.members: Optional[List[_Unit]] = None
        self.header_end = start
        self.eager = self.chosen = False  # a member's: parsed in the first pass, in the second


def parse_focused(text: str, lines: Sequence[str], names: Sequence[str], filename: str = "<unknown>",
                  first: Optional["FirstPass"] = None, index: Optional[TextIndex] = None) -> Optional[ast.Module]:
    """`focus(parse(text), text, lines, names)`, parsing only what it needs; None when the text
    cannot be split safely (see the module doc). `first`: `first_pass` of the same arguments;
    `index`: the searches of this text made so far (the engine's, for the whole lint)."""
    index = TextIndex.of(text, index)
    first = first or first_pass(text, lines, names, filename, regions.MIN_STATEMENTS, index, screen=True)
    if first is None or len(first.units) < regions.MIN_STATEMENTS:
        return None
    units, body, stubs = first.units, list(first.body), first.stubs
    focused = focus(ast.Module(body=body, type_ignores=[]), text, lines, list(names), index)
    wanted = [stubs[s] for s in focused.body if s in stubs]
    for s in focused.body:
        if isinstance(s, ast.ClassDef):
            wanted += [stubs[m] for m in s.body if m in stubs]
    if not wanted:
        return focused
    chosen = [False] * len(units)
    for i, k in set(wanted):
        if k < 0:
            chosen[i] = True
        else:
            units[i].members[k].chosen = True  # type: ignore[index]
    real = _parse(text, units, chosen, filename, second=True)
    if real is None:
        return None
    top, inner = real
    found: Dict[Tuple[int, int], ast.stmt] = {}
    for i, k in set(wanted):
        got = top[i] if k < 0 else inner[i][k]
        expected = units[i] if k < 0 else units[i].members[k]  # type: ignore[index]
        if len(got) != 1 or getattr(got[0], "name", None) != expected.name:
            return None
        found[(i, k)] = got[0]

    def real_of(node: ast.stmt) -> ast.stmt:
        where = stubs.get(node)
        return found[where] if where is not None else node

    focused.body = [real_of(s) for s in focused.body]
    for s in focused.body:
        if isinstance(s, ast.ClassDef):
            s.body = [real_of(m) for m in s.body]
    return focused


def parse_mentioning(text: str, lines: Sequence[str], names: Sequence[str], filename: str = "<unknown>",
                     first: Optional["FirstPass"] = None) -> Optional[ast.Module]:
    """The module's statements other than functions and classes, and the functions and classes
    (members of a big class) whose text holds one of `names`: every statement that can spell
    them, in their order. None when the text cannot be split safely or nothing would be left out.
    `first`: `first_pass` of the same arguments."""
    first = first or first_pass(text, lines, names, filename)
    if first is None:
        return None
    body: List[ast.stmt] = []
    for statement in first.body:
        if statement in first.stubs:
            continue
        if isinstance(statement, ast.ClassDef) and any(m in first.stubs for m in statement.body):
            copy = ast.ClassDef(**{f: getattr(statement, f) for f in statement._fields})
            copy.body = [m for m in statement.body if m not in first.stubs]
            ast.copy_location(copy, statement)
            statement = copy
        body.append(statement)
    return ast.Module(body=body, type_ignores=[])


# Before Python 3.12, `ast` cannot read type parameters (PEP 695): as `vjplint.syntax.source.parse`
# does for the whole file, a statement holding them is left out (blank) when it reads without them.
_OLD_GRAMMAR = sys.version_info < (3, 12)


def _newer_syntax(chunk: str) -> bool:
    return _TYPE_PARAMETERS.search(chunk) is not None and not _parses(chunk) and _parses(_without_type_parameters(chunk))


def _hinted(text: str, hints: List[int], unit: "_Unit") -> bool:
    """Whether `_TYPE_PARAMETERS` finds something in the unit's text, asked only of the lines
    holding a hint: its every match lies on one line, where a hint (`_TYPE_PARAMETER_HINTS`)
    starts too, so the lines without one need no search (a unit holding a hint is often a big
    class whose text merely says `type x =` somewhere: searching all of it, a pattern without a
    literal start, cost the JAX tree's lint about 20 ms)."""
    i = bisect.bisect_left(hints, unit.start)
    done = -1  # the end of the line searched last
    while i < len(hints) and hints[i] < unit.end:
        at = hints[i]
        i += 1
        if at < done:
            continue
        start = max(text.rfind("\n", 0, at) + 1, unit.start)
        end = text.find("\n", at, unit.end)
        done = end = unit.end if end < 0 else end
        if _TYPE_PARAMETERS.search(text, start, end) is not None:
            return True
    return False


# What `_TYPE_PARAMETERS` finds, and more, by patterns that start with a literal (searched for,
# not tried at every character: a tenth of its time).
_TYPE_PARAMETER_HINTS = tuple(re.compile(p) for p in (r"def[ \t]+\w+[ \t]*\[", r"class[ \t]+\w+[ \t]*\[",
                                                      r"type[ \t]+\w+[ \t]*[\[=]"))



class FirstPass:
    """The module's statements, with a stub for each function or class `focus` reads only by
    name, from the first parse of `parse_focused` (shared with `parse_mentioning`)."""

    def __init__(self, units: List[_Unit], body: List[ast.stmt], stubs: Dict[ast.AST, Tuple[int, int]]) -> None:
        self.units, self.body, self.stubs = units, body, stubs  # stubs: stub -> (unit, member or -1)


def first_pass(text: str, lines: Sequence[str], names: Sequence[str], filename: str = "<unknown>",
               least: int = 0, index: Optional[TextIndex] = None, screen: bool = False) -> Optional[FirstPass]:
    """The first parse for the recognised `names`; None when the text cannot be split safely, has
    fewer than `least` statements, or every statement must be parsed anyway. `screen`: leave out
    the statements other than functions and classes that `focus` can neither keep nor be swayed
    by (`_screen`): they are checked for syntax errors only, in bounded chunks whose trees are
    dropped; the result is then for `parse_focused` alone, not `parse_mentioning`."""
    if "\r" in text or "\x00" in text:
        return None
    index = TextIndex.of(text, index)
    strings = index.strings()
    if strings is None:
        return None
    units = _units(text, strings)
    if units is not None and _OLD_GRAMMAR:
        hints = sorted(m.start() for p in _TYPE_PARAMETER_HINTS for m in p.finditer(text))
        if hints:  # only the units holding a hint are tried
            units = [u for u in units if not (_hinted(text, hints, u) and _newer_syntax(text[u.start:u.end]))]
    if units is None or len(units) < least:
        return None
    marks = _Marks(text, names, index)
    screened = False
    if screen and len(units) >= SCREEN_MIN_STATEMENTS:
        wanted = _screen(text, units, marks)
        if wanted is not None:
            left_out = [u for u, w in zip(units, wanted) if not w]
            if not _checks(text, left_out, filename):
                return None  # a syntax error there: the whole parse reports it
            units, screened = [u for u, w in zip(units, wanted) if w], True
    eager = [marks.eager(u) for u in units]
    for u, e in zip(units, eager):
        if e and u.kind == "class" and not marks.has_global(u):
            _split_class(text, u, strings, marks)
    if all(eager) and not any(u.members for u in units) and not screened:
        return None  # nothing to save: the usual parse
    parsed = _parse(text, units, eager, filename)
    if parsed is None:
        return None
    statements, members = parsed
    stubs: Dict[ast.AST, Tuple[int, int]] = {}  # stub -> (unit, member or -1)
    body: List[ast.stmt] = []
    for i, unit in enumerate(units):
        if not eager[i]:
            stub = _stub(unit, lines)
            stubs[stub] = (i, -1)
            body.append(stub)
            continue
        body.extend(statements[i])
        if unit.members:
            cls = statements[i][0]
            assert isinstance(cls, ast.ClassDef)
            cls.body = []
            for k, member in enumerate(unit.members):
                if member.eager:
                    cls.body.extend(members[i][k])
                else:
                    stub = _stub(member, lines)
                    stubs[stub] = (i, k)
                    cls.body.append(stub)
    return FirstPass(units, body, stubs)


def parse_top_level(text: str, filename: str = "<unknown>") -> Optional[ast.Module]:
    """The module's statements other than functions and classes (imports, assignments, `if`
    and `try` blocks: what runs at import besides definitions), parsed alone; None when the text
    cannot be split safely (see the module doc)."""
    if "\r" in text or "\x00" in text:
        return None
    strings = _string_spans(text)
    units = _units(text, strings) if strings is not None else None
    if units is None:
        return None
    chosen = [u.kind == "" for u in units]
    parsed = _parse(text, units, chosen, filename) if any(chosen) else ({}, {})
    if parsed is None:
        return None
    return ast.Module(body=[s for i, c in enumerate(chosen) if c for s in parsed[0][i]], type_ignores=[])


_IMPORT = re.compile(r"(?:import|from)\b")
_CHECK_CHUNK = 1 << 18  # characters of left-out statements parsed at once (their trees dropped)


def _screen(text: str, units: List[_Unit], marks: "_Marks") -> Optional[List[bool]]:
    """Which units `focus` must see; None when all (or too many to gain by leaving some out).
    Functions and classes are all seen (as stubs or parsed); so are the first statement (a
    docstring), imports and the statements holding a recognised name. Another statement can be
    kept by `focus` only when it shares a word with a statement it keeps (it mentions a name
    that one binds, or binds a word that one holds), or binds a name made from one (`f_fwd` for
    `f`); and it sways what `focus` keeps only when it binds a name an import binds (then the
    name is not imported only). All of these share a word with a seen statement, or hold a word
    made from one: so the seen statements are closed under that, on the words of their text
    (words in comments and strings included: a superset). What is left out then cannot change
    what `focus` keeps. Only ASCII text: the words are `WORD`'s, as `focus` reads them."""
    if len(units) < 2 * regions.MIN_STATEMENTS or not text.isascii():
        return None
    seen = [u.kind != "" or (text[u.start] in "if" and _IMPORT.match(text, u.start) is not None)
            for u in units]
    seen[0] = True
    starts = [u.start for u in units]
    for end in marks.names:  # a statement holding a recognised name (`_Marks.eager`)
        k = bisect.bisect_left(starts, end) - 1
        if k >= 0 and end <= units[k].end:
            seen[k] = True
    plain = [k for k, s in enumerate(seen) if not s]
    if len(plain) < regions.MIN_STATEMENTS:
        return None
    known: Set[str] = set()
    for k, u in enumerate(units):
        if seen[k]:
            known.update(WORD.findall(text, u.start, u.end))
    starts = [units[k].start for k in plain]
    others: Set[str] = set()  # the words of the statements not seen yet
    run = 0
    while run < len(plain):  # runs of consecutive statements, one search each
        end = run
        while end + 1 < len(plain) and plain[end + 1] == plain[end] + 1:
            end += 1
        others.update(WORD.findall(text, units[plain[run]].start, units[plain[end]].end))
        run = end + 1
    made: Dict[str, Set[str]] = {}  # a part of a word before or after an underscore -> those words
    for word in others:
        if "_" in word.strip("_"):
            bare = word.lstrip("_")
            for k, c in enumerate(bare):
                if c == "_":
                    made.setdefault(bare[:k], set()).add(word)
            for k, c in enumerate(word):
                if c == "_":
                    made.setdefault(word[k + 1:], set()).add(word)
    # The statements holding a word: found by searching the text for it, for the first few words
    # (most files: none or a handful); past _SEARCHES, from an index of the words of the
    # statements not seen yet, made once (a search each of thousands of words of a 2 MB notebook
    # export read the text thousands of times: 38 s).
    index: Optional[Dict[str, List[int]]] = None
    searches = 0
    fresh = set(known)
    while fresh:
        hits = fresh & others
        for word in fresh:
            hits |= made.get(word, set())
        fresh = set()
        if index is None and searches + len(hits) > _SEARCHES:
            index = {}
            for i, k in enumerate(plain):
                if not seen[k]:
                    for w in set(WORD.findall(text, units[k].start, units[k].end)):
                        index.setdefault(w, []).append(i)
        for word in hits:
            if index is not None:
                holders: Iterable[int] = index.get(word, ())
            else:
                searches += 1
                holders = _holders(text, word, starts, units, plain)
            for i in holders:
                if seen[plain[i]]:
                    continue
                u = units[plain[i]]
                seen[plain[i]] = True
                fresh.update(w for w in WORD.findall(text, u.start, u.end) if w not in known)
        known |= fresh
    left = sum(1 for s in seen if not s)
    if left == 0 or len(units) - left < regions.MIN_STATEMENTS:
        return None
    return seen


# Leaving statements out (`_screen`) pays only where there are many to leave out: it searches the
# text for every word a kept piece makes, which cost the JAX tree's cold lint about 7 % (0.22 s on
# one 2.3 MB notebook of 253 statements) and saves nothing on a module of a few hundred; on 10 MB of
# top-level assignments (600k statements) it is what keeps the lint under 500 MB (docs/performance.md).
SCREEN_MIN_STATEMENTS = 2000
_SEARCHES = 32  # words searched for in the text before `_screen` indexes the words instead


def _holders(text: str, word: str, starts: List[int], units: List[_Unit], plain: List[int]) -> Iterator[int]:
    """The indices into `plain` of the statements where `word` stands (`_standing`)."""
    for at in _standing(text, word):
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and at + len(word) <= units[plain[i]].end:
            yield i


def _contiguous(units: Sequence[_Unit]) -> List[Tuple[int, int]]:
    """The [start, end) offsets of the runs of units that follow each other in the text."""
    runs: List[Tuple[int, int]] = []
    start = end = -1
    for u in units:
        if u.start != end:
            if end >= 0:
                runs.append((start, end))
            start = u.start
        end = u.end
    if end >= 0:
        runs.append((start, end))
    return runs


def _checks(text: str, units: List[_Unit], filename: str) -> bool:
    """Whether the units' statements parse, read in chunks of about `_CHECK_CHUNK` characters
    whose trees are dropped at once (the cyclic collector paused meanwhile: it would walk every
    node of the growing tree, twice the parse's time for nothing to free)."""
    with paused_gc():
        starts = [u.start for u in units]
        k = 0
        while k < len(units):
            end = max(k + 1, bisect.bisect_left(starts, starts[k] + _CHECK_CHUNK, k + 1))
            chunk = "".join(text[a:b] for a, b in _contiguous(units[k:end]))
            try:  # the symbol table is the parse without its Python tree: a third cheaper
                symtable.symtable(chunk, filename, "exec")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                try:  # or an error of the symbol table, which `ast.parse` does not raise
                    ast.parse(chunk, filename)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return False
            k = end
    return True


class _Marks:
    """Where the recognised names and `global` statements are in the text: whether a unit holds
    one is a bisection, not a search of its text per name."""

    def __init__(self, text: str, names: Sequence[str], index: TextIndex) -> None:
        # where each occurrence ends: held when it ends inside the unit
        self.names = sorted(at + len(n) for n, found in index.occurrences(names).items() for at in found)
        self.globals: List[int] = []  # where each `global` statement's keyword ends (as GLOBAL matches)
        at = text.find("global")
        while at >= 0:  # a literal search: a MULTILINE `^` pattern is tried at every character
            if text[at + 6:at + 7] in (" ", "\t") and not text[text.rfind("\n", 0, at) + 1:at].strip(" \t"):
                self.globals.append(at + 7)
            at = text.find("global", at + 6)

    def eager(self, unit: "_Unit") -> bool:
        """Whether `focus` may read the unit's syntax: all but functions and classes, and those
        that hold a recognised name or a `global` statement."""
        return unit.kind == "" or self._within(self.names, unit) or self.has_global(unit)

    def has_global(self, unit: "_Unit") -> bool:
        """Whether a `global` statement may be in the unit (what it binds is the module's)."""
        return self._within(self.globals, unit)

    @staticmethod
    def _within(ends: List[int], unit: "_Unit") -> bool:
        i = bisect.bisect_right(ends, unit.start)
        return i < len(ends) and ends[i] <= unit.end


# -- splitting ------------------------------------------------------------------------------------
def _units(text: str, strings: List[Tuple[int, int]]) -> Optional[List[_Unit]]:
    """The top-level statements' texts, in order (the lines before the first one, comments and
    blanks, belong to none); None when there is none."""
    starts: List[int] = [0] if text[:1] and not text[0].isspace() and text[0] not in "#)]}" else []
    starts.extend(m.end() for m in _CODE_LINE.finditer(text))
    total_rows = text.count("\n") + (0 if text.endswith("\n") else 1)
    return _split(text, _outside(starts, strings) if strings else starts, 0, 1, len(text), total_rows) or None


def _split(text: str, starts: List[int], counted: int, row: int, end: int, last_row: int,
           indent: int = 0) -> List[_Unit]:
    """Units from the candidate statement starts (offsets of their code, ascending, `indent`
    characters into their lines; `row` is the row of offset `counted`): a clause (`else:`)
    continues the statement above, and a decorator the definition below it. A unit's text runs
    from the start of its first line; the last one ends at `end`, on `last_row`."""
    heads: List[Tuple[int, int, int]] = []  # (offset, row, offset of the def/class line)
    decorated = False
    count = text.count
    for at in starts:  # (a first character checked before a pattern: this runs once per line of code)
        c = text[at]
        if c == "e" or c == "f":
            if _CONTINUATION.match(text, at):
                continue
        row += count("\n", counted, at)
        counted = at
        if decorated:  # the line after a decorator is part of its statement
            heads[-1] = (heads[-1][0], heads[-1][1], at)
        else:
            heads.append((at, row, at))
        decorated = c == "@"
    units: List[_Unit] = []
    for k, (start, first, definition) in enumerate(heads):
        stop, next_row = (heads[k + 1][0], heads[k + 1][1]) if k + 1 < len(heads) else (end, last_row + 1)
        m = _DEFINITION.match(text, definition) if text[definition] in "adc" else None
        kind, name = "", ""
        if m is not None:
            kind = "class" if m.group(1) == "class" else "async" if m.group(1)[0] == "a" else "def"
            name = m.group(2)
        units.append(_Unit(start - indent, stop - indent if k + 1 < len(heads) else stop, first, next_row - 1,
                           kind, name))
    return units


def _split_class(text: str, unit: _Unit, strings: List[Tuple[int, int]], marks: _Marks) -> None:
    """Split a big class into its members (`focus` splits such a class too), when its header is
    one line: set `unit.members` (and which are parsed in the first pass)."""
    at = unit.start
    while text.startswith("@", at):  # past the decorators, to the `class` line
        at = text.find("\n", at) + 1
        if at <= 0:
            return
    header = _CLASS_HEADER.match(text, at, unit.end)
    if header is None:
        return
    body = _BODY_LINE.search(text, header.end() - 1, unit.end)
    if body is None:
        return
    indent = body.group(1)
    starts = [m.end() for m in _member_line(indent).finditer(text, header.end() - 1, unit.end)]
    starts = _outside(starts, strings) if strings else starts
    row = unit.first + text.count("\n", unit.start, header.end())
    members = _split(text, starts, header.end(), row, unit.end, unit.last, len(indent))
    if len(members) < regions.MIN_STATEMENTS:
        return
    for member in members:
        member.eager = marks.eager(member)
    members[-1].eager = True  # the class's end is its last member's: parsed, it is exact
    if all(m.eager for m in members):
        return
    unit.members, unit.header_end = members, members[0].start


@functools.lru_cache(maxsize=16)
def _member_line(indent: str) -> "re.Pattern[str]":
    """A line at exactly this indentation starting with code that can start a statement."""
    return re.compile(r"\n" + re.escape(indent) + r"(?=[^\s#)\]}])")


def _outside(starts: List[int], spans: List[Tuple[int, int]]) -> List[int]:
    """The offsets of `starts` (ascending) that no span holds."""
    kept: List[int] = []
    done = 0
    for begin, end in spans:  # the starts in (begin, end) are dropped: a bisection per span
        low = bisect.bisect_right(starts, begin, done)
        high = bisect.bisect_left(starts, end, low)
        kept.extend(starts[done:low])
        done = high
    kept.extend(starts[done:])
    return kept


# -- parsing --------------------------------------------------------------------------------------
def _parse(text: str, units: Sequence[_Unit], chosen: Sequence[bool], filename: str, second: bool = False
           ) -> Optional[Tuple[Statements, Dict[int, Statements]]]:
    """Parse the chosen units together, every other line blank: their statements per unit, and
    per split class its chosen members' statements (the first pass: the eager members, the
    second: the chosen ones); None when the text does not parse or a statement does not lie in
    exactly its unit."""
    flag = "chosen" if second else "eager"
    pieces: List[_Unit] = []
    inner: Dict[int, List[int]] = {}  # split class -> the indices of the members parsed
    picked: List[int] = []
    for i, unit in enumerate(units):
        parts = [k for k, m in enumerate(unit.members) if getattr(m, flag)] if unit.members else None
        if parts and unit.members and (second or chosen[i]):
            pieces.append(_Unit(unit.start, unit.header_end, unit.first, unit.members[0].first - 1, "", ""))
            pieces += [unit.members[k] for k in parts]
            inner[i] = parts
            picked.append(i)
        elif chosen[i]:
            pieces.append(unit)
            picked.append(i)
    out: List[str] = []
    row = 1
    for piece in pieces:
        out.append("\n" * (piece.first - row))
        out.append(text[piece.start:piece.end])
        row = piece.last + 1
    try:
        module = ast.parse("".join(out), filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    top = _assign(module.body, [units[i] for i in picked])
    if top is None:
        return None
    statements = {i: top[k] for k, i in enumerate(picked)}
    members: Dict[int, Statements] = {}
    for i, parts in inner.items():
        cls = statements[i]
        if len(cls) != 1 or not isinstance(cls[0], ast.ClassDef):
            return None
        found = _assign(cls[0].body, [units[i].members[k] for k in parts])  # type: ignore[index]
        if found is None:
            return None
        members[i] = dict(zip(parts, found))
    return statements, members


def _assign(body: Sequence[ast.stmt], units: Sequence[_Unit]) -> Optional[List[List[ast.stmt]]]:
    """The statements of `body` that each unit holds, in order; None unless each unit's first
    statement starts on its first row, any more (`a = 1; b = 2`) on the row where the one before
    ends, and none runs past it."""
    found: List[List[ast.stmt]] = [[] for _ in units]
    k = 0
    for statement in body:
        begin, end = first_line(statement), statement.end_lineno or statement.lineno
        while k < len(units) and units[k].last < begin:
            k += 1
        if k == len(units):
            return None
        held = found[k]
        if begin != (units[k].first if not held else held[-1].end_lineno) or end > units[k].last:
            return None
        held.append(statement)
    return found if all(found) else None


def _stub(unit: _Unit, lines: Sequence[str]) -> ast.stmt:
    """A function or class that `focus` reads only by its name and rows: its rows end at its
    last line of code (trailing comments and blank lines belong to no statement)."""
    last = unit.last
    while last > unit.first and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
        last -= 1
    if unit.kind == "class":
        stub: ast.stmt = ast.ClassDef(name=unit.name, bases=[], keywords=[], body=[], decorator_list=[])
    else:
        cls = ast.AsyncFunctionDef if unit.kind == "async" else ast.FunctionDef
        stub = cls(name=unit.name, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                      defaults=[]), body=[], decorator_list=[])
    stub.lineno, stub.end_lineno, stub.col_offset, stub.end_col_offset = unit.first, last, 0, 0
    return stub
