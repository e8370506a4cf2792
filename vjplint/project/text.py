"""What the project indexes (vjplint.project.cross_values, vjplint.project.loops) read from a module's
bytes before linting: its parse, and the words of its import lines."""
from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Set, Tuple

from vjplint.lint.engine import may_contain_findings, names_end_at
from vjplint.syntax.names import PREFILTER_NAMES
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import SourceError, decode
from vjplint.syntax.text_spans import TextIndex


def parse(data: bytes):
    """(tree, lines, text), or None: a file only the newer-syntax fallback parses is left out (that
    fallback imports libcst, too slow for an index; linting the file reports it as usual)."""
    import ast

    try:
        text = decode(data).text
        return ast.parse(text), source_lines(text), text
    except (SourceError, SyntaxError, RecursionError, ValueError, MemoryError):
        return None


def parse_lazily(data: bytes):
    """(its statements other than functions and classes (imports, assignments, if/try blocks),
    lines, text, a `LazyModule` for the rest), or None where `parse` gives None. The whole file
    is parsed only when the text cannot be split safely (vjplint.syntax.region_parse)."""
    import ast

    from vjplint.syntax.region_parse import parse_top_level

    try:
        text = decode(data).text
        lines = source_lines(text)
        top = parse_top_level(text)
        lazy = LazyModule(text, lines, ast.parse(text) if top is None else None)
    except (SourceError, SyntaxError, RecursionError, ValueError, MemoryError):
        return None
    return (top if top is not None else lazy.whole()), lines, text, lazy


class LazyModule:
    """A module's text, parsed as far as a reader asks (vjplint.syntax.region_parse); None for what
    cannot be parsed."""

    def __init__(self, text: str, lines: List[str], whole=None) -> None:
        self.text, self.lines = text, lines
        self.parsed_whole = whole  # the whole module, once parsed
        self._firsts: dict = {}
        self._index = None  # the text's searches (vjplint.syntax.text_spans.TextIndex), made when first asked

    def index(self):
        if self._index is None:
            self._index = TextIndex(self.text)
        return self._index

    def whole(self):
        import ast

        if self.parsed_whole is None:
            self.parsed_whole = ast.parse(self.text)
        return self.parsed_whole

    def mentioning(self, names: List[str]):
        """The statements that can spell one of `names` (`region_parse.parse_mentioning`), or the
        whole module."""
        from vjplint.syntax.region_parse import parse_mentioning

        return self._guarded(lambda: parse_mentioning(self.text, self.lines, names, first=self._first(names))
                             or self.whole())

    def regions(self, names: List[str]):
        """What `vjplint.syntax.regions.focus` keeps of the module for `names`."""
        from vjplint.syntax.region_parse import parse_focused
        from vjplint.syntax.regions import focus

        return self._guarded(lambda: parse_focused(self.text, self.lines, names, first=self._first(names),
                                                   index=self.index())
                             or focus(self.whole(), self.text, self.lines, names, self.index()))

    def _first(self, names: List[str]):
        """`region_parse.first_pass` for `names`, made once (what `mentioning` parsed, `regions`
        of the same names reads again)."""
        from vjplint.syntax.region_parse import first_pass

        key = tuple(names)
        if key not in self._firsts:
            self._firsts[key] = first_pass(self.text, self.lines, names, index=self.index())
        return self._firsts[key]

    @staticmethod
    def _guarded(make):
        try:
            return make()
        except (SyntaxError, RecursionError, ValueError, MemoryError):
            return None  # as `parse` would have said of the file


IMPORT_LINE = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b([^\n]*)|import[ \t]+([^\n]*))", re.MULTILINE)
WORD = re.compile(rb"\w+")


def imported_words(data: bytes) -> Set[bytes]:
    """The words of the module's import lines (module paths and imported names): a caller of
    `pkg.mod.f` has `mod` among them."""
    words: Set[bytes] = set()
    # Only lines holding `import` can match: find those (a literal search), not every line start.
    line = -1
    at = data.find(b"import")
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        if start != line:
            line = start
            m = IMPORT_LINE.match(data, start)
            if m is not None:
                for group in m.groups():
                    if group:
                        words.update(WORD.findall(group))
        at = data.find(b"import", at + 6)
    return words


_CREATOR = b"custom_"


class Scan(NamedTuple):
    """What one pass over a module's bytes finds, made once by the index and shared by its steps
    (the wrappers, the lint's prefilter, the value summaries' exported names and loop helpers,
    the rules defined in another module): `scan(data)`."""

    made: Tuple[bool, bool]  # `creators(data)`
    registers: bool  # b"defvjp" or b"defjvp" in the bytes (a registration's method, anywhere)
    candidate: bool  # `may_contain_findings(data, PREFILTER_NAMES)`: the lint's byte prefilter


_CUSTOM = tuple(n for n in PREFILTER_NAMES if n.startswith(_CREATOR))  # the prefilter's `custom_` names
_REGISTRATIONS = (b"defvjp", b"defjvp")
_OTHERS = tuple(n for n in PREFILTER_NAMES if n not in _CUSTOM and n not in _REGISTRATIONS)


def scan(data: bytes) -> Scan:
    """`creators(data)`, whether `defvjp`/`defjvp` occur, and the byte prefilter's answer for the
    default names, from one search for each needle: `custom_` once for the creators and the
    prefilter's four `custom_` names (most files hold neither), `defvjp` and `defjvp` once each
    for the registrations and the prefilter; the prefilter's other names only while no name
    decided it. The same answers as the three asked apart (tests/unit/test_project_scan.py)."""
    vjp = jvp = candidate = False
    at = data.find(_CREATOR)
    while at >= 0:
        kind = data[at + 7:at + 10]
        if kind == b"vjp":
            vjp = True
        elif kind == b"jvp":
            jvp = True
        if not candidate:
            candidate = names_end_at(data, at, _CUSTOM)
        if vjp and jvp and candidate:
            break
        at = data.find(_CREATOR, at + 7)
    registers = False
    for name in _REGISTRATIONS:
        at = data.find(name)
        registers = registers or at >= 0
        while at >= 0 and not candidate:
            candidate = names_end_at(data, at, _REGISTRATIONS)
            at = data.find(name, at + 1)
    if not candidate:  # a NUL byte, or one of the rarer names
        candidate = may_contain_findings(data, _OTHERS)
    return Scan((vjp, jvp), registers, candidate)


# The bytes of files a run has read (by `str(path)`), with what `scan` says of them: the index
# reads each file once and hands both on to the value summaries.
Known = Dict[str, Tuple[bytes, Scan]]


def creators(data: bytes) -> Tuple[bool, bool]:
    """(b"custom_vjp" in data, b"custom_jvp" in data), from one search for `custom_` (most files
    hold neither: one pass over the bytes instead of two). Asked once per file by the index, which
    hands the answer on with the bytes (`Known`) to the value summaries (its exported names, its
    loop helpers)."""
    vjp = jvp = False
    at = data.find(_CREATOR)
    while at >= 0:
        kind = data[at + 7:at + 10]
        if kind == b"vjp":
            vjp = True
            if jvp:
                break
        elif kind == b"jvp":
            jvp = True
            if vjp:
                break
        at = data.find(_CREATOR, at + 7)
    return vjp, jvp
