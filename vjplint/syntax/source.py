"""Turning bytes into text and text into an `ast` tree.

Analysis runs on CPython's `ast` (about ten times faster than libcst); libcst is kept for what
it alone does, format-preserving fixes. When the running interpreter is older than the code's
syntax (PEP 695 generics on 3.11, say), libcst, whose parser knows newer grammars, splits the
module into top-level statements and the ones `ast` cannot read are blanked out, so the rest
of the file is still analysed with its real line numbers.
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import functools
import gc
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple, TypeVar


class SourceError(Exception):
    """The file cannot be read as Python source: carries a position for VJP900."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.row = max(row, 1)
        self.column = max(column, 1)


@dataclass(frozen=True)
class DecodedSource:
    """A file's text as decoded, with what it takes to write it back the same way."""

    text: str
    encoding: str
    bom: bool
    newline: str  # the file's dominant line ending


def encode(text: str, decoded: DecodedSource) -> bytes:
    """The inverse of `decode` for a rewritten text: the file's own encoding and BOM."""
    data = text.encode(decoded.encoding)
    return codecs.BOM_UTF8 + data if decoded.bom else data


_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
              (codecs.BOM_UTF16_BE, "UTF-16"))


_TEXT_BYTES = frozenset(b"\t\n\r" + bytes(range(0x20, 0x7F)))


def _wide_ascii(head: bytes) -> bool:
    """Two ASCII characters of text as UTF-16 (or one as UTF-32): a text byte beside a NUL."""
    if len(head) < 4:
        return False
    little = head[0] in _TEXT_BYTES and head[1] == 0 and (head[2] in _TEXT_BYTES or head[2:4] == b"\x00\x00")
    big = head[0] == 0 and head[1] in _TEXT_BYTES and head[2] == 0 and head[3] in _TEXT_BYTES
    return little and head[3] == 0 or big or head[:3] == b"\x00\x00\x00" and head[3] in _TEXT_BYTES


def decode(data: bytes) -> DecodedSource:
    """Decode like the interpreter does: BOM, then a PEP 263 cookie, else UTF-8."""
    wide = next((name for bom_, name in _WIDE_BOMS if data.startswith(bom_)), None)
    if wide is None and _wide_ascii(data[:4]):
        wide = "UTF-16 or UTF-32"  # no byte-order mark, but ASCII text in 2 or 4 bytes a character
    if wide is not None:
        raise SourceError(f"the file is {wide} text, which Python cannot run (it reads source as UTF-8, PEP 3120, "
                          f"or the encoding a coding cookie names): save it as UTF-8")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # tokenize's "encoding problem: utf-8" means a BOM/cookie clash
        if "invalid or missing encoding declaration" not in str(exc):
            reason = "it starts with a UTF-8 byte-order mark but its coding cookie names another encoding" \
                if bom and "encoding problem" in str(exc) else str(exc)
            raise SourceError(f"cannot determine the file's encoding: {reason}") from None
        encoding = "utf-8"  # no cookie and the first lines are not UTF-8: decoding says where
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    try:
        text = body.decode(encoding)
    except (UnicodeError, LookupError) as exc:  # UnicodeError: codecs such as idna raise no subclass
        row, column = _byte_offset_to_position(body, getattr(exc, "start", 0), encoding)
        raise SourceError(
            f"file is not valid {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}",
            row,
            column,
        ) from None
    return DecodedSource(text, encoding, bom, _dominant_newline(text))


def _byte_offset_to_position(data: bytes, offset: int, encoding: str = "utf-8") -> Tuple[int, int]:
    """Row (lines end at \\n, \\r\\n or \\r, as in Python) and column in code points."""
    before = data[:offset].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    line = before[before.rfind(b"\n") + 1 :]
    try:
        column = len(line.decode(encoding, "replace"))
    except (UnicodeError, LookupError):  # a codec without the "replace" handler (idna) or no text codec
        column = len(line)
    return before.count(b"\n") + 1, column + 1


def _dominant_newline(text: str) -> str:
    if "\r" not in text:
        return "\n"
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """Parse with `ast`; fall back to blanking statements of newer syntax (see module doc)."""
    if "\x00" in text:
        before = text[: text.index("\x00")].encode("utf-8", "surrogatepass")
        row, column = _byte_offset_to_position(before, len(before))
        raise SourceError("source contains a NUL byte", row, column)
    try:
        return ast.parse(text, filename)
    except SyntaxError as exc:
        first_error = exc
    except (RecursionError, MemoryError):
        raise SourceError("source is nested too deeply to parse") from None
    # A nesting limit is no newer syntax, and libcst is quadratic (then recursive) on deep nesting.
    limit = "too many" in (first_error.msg or "") or "nested" in (first_error.msg or "")
    if not limit:
        tree = _parse_blanking_at_errors(text, first_error, filename)
        if tree is not None:
            return tree
    try:
        blanked = None if limit else _blank_newer_syntax(text)
    except (RecursionError, MemoryError):
        blanked = None
    if blanked is not None:
        try:
            return ast.parse(blanked, filename)
        except (SyntaxError, RecursionError, MemoryError):
            pass
    raise SourceError(
        f"syntax error: {first_error.msg}",
        first_error.lineno or 1,
        first_error.offset or 1,
    )


def same_statements(module: ast.Module, focused: ast.Module) -> Optional[ast.Module]:
    """`focused` (the regions of another parse of the same text) made of `module`'s statements,
    matched by position; None when one has no match (the caller makes the regions again)."""
    from vjplint.syntax.regions import _with_body, first_line

    def key(statement: ast.stmt) -> Tuple[int, int]:
        return first_line(statement), statement.col_offset

    at = {key(s): s for s in module.body}
    body: List[ast.stmt] = []
    for statement in focused.body:
        own = at.get(key(statement))
        if own is None or type(own) is not type(statement):
            return None
        if isinstance(statement, ast.ClassDef) and len(statement.body) != len(own.body):  # type: ignore[attr-defined]
            members = {key(m): m for m in own.body}  # type: ignore[attr-defined]
            chosen = [members.get(key(m)) for m in statement.body]
            if any(m is None for m in chosen):
                return None
            own = _with_body(own, chosen)  # type: ignore[arg-type]
        body.append(own)
    return ast.Module(body=body, type_ignores=module.type_ignores)


ERROR_DRIVEN_TRIES = 4


def _parse_blanking_at_errors(text: str, error: SyntaxError, filename: str) -> Optional[ast.Module]:
    """Blank the statement (split at column 0) where the parser stops, when it alone is rejected
    by `ast` and read by libcst, and parse again: a parse or two for the usual file with one or
    two statements of newer syntax, instead of one per statement. None when that is not the
    case (the error is elsewhere, a real one, or there are many): `_blank_newer_syntax` decides."""
    import bisect

    lines = io.StringIO(text, newline="").readlines()
    starts = _column_zero_starts(text)
    ends = [*starts[1:], len(lines)]
    # Statements with type parameters (PEP 695) are found by a pattern and blanked together
    # first: one parse more, not one per statement.
    if _TYPE_PARAMETERS.search(text):
        found = False
        for first, end in zip(starts, ends):
            chunk = "".join(lines[first:end])
            if _TYPE_PARAMETERS.search(chunk) and not _parses(chunk) and _parses(_without_type_parameters(chunk)):
                lines[first:end] = ["\n"] * (end - first)
                found = True
        if found:
            try:
                return ast.parse("".join(lines), filename)
            except SyntaxError as exc:
                error = exc
            except (RecursionError, MemoryError):
                return None
    for _ in range(ERROR_DRIVEN_TRIES):
        index = bisect.bisect_right(starts, (error.lineno or 1) - 1) - 1
        if index < 0:
            return None
        first, end = starts[index], ends[index]
        chunk = "".join(lines[first:end])
        try:
            ast.parse(chunk)
            return None  # the statement parses alone: the error is not its own syntax
        except SyntaxError as exc:
            if "too many" in (exc.msg or "") or "nested" in (exc.msg or ""):
                return None
        except (RecursionError, MemoryError):
            return None
        if not _newer_grammar_reads(chunk):
            return None
        lines[first:end] = ["\n"] * (end - first)
        try:
            return ast.parse("".join(lines), filename)
        except SyntaxError as exc:
            error = exc
        except (RecursionError, MemoryError):
            return None
    return None


def _blank_newer_syntax(text: str) -> Optional[str]:
    """Return `text` with each top-level statement `ast` rejects replaced by blank lines."""
    # Lines starting at column 0 split the module where the tokenizer does, unless one is inside
    # a string or brackets: then the piece before it can be read by neither parser and the
    # tokenizer decides.
    blanked = _blank_statements(text, _column_zero_starts(text))
    if blanked is not None:
        return blanked
    starts = _statement_starts(text)
    if starts is not None:  # the tokenizer found the statements: ten times faster than libcst
        return _blank_statements(text, starts)
    import libcst

    try:
        module = libcst.parse_module(text)
    except Exception:  # libcst's ParserSyntaxError and its recursion failures alike
        return None
    # Python's line breaks only (str.splitlines also splits at \x0b, \x0c, \x1c, \x85, \u2028...).
    lines = io.StringIO(text, newline="").readlines()
    out: list[str] = []
    row = len(module.header)  # one EmptyLine per header line
    out.extend(lines[:row])
    for statement in module.body:
        code = module.code_for_node(statement)
        count = len(io.StringIO(code, newline="").readlines()) or 1
        chunk = lines[row : row + count]
        row += count
        try:
            ast.parse("".join(chunk))
            out.extend(chunk)
        except SyntaxError as exc:
            if "too many" in (exc.msg or "") or "nested" in (exc.msg or ""):
                return None  # a limit every CPython has, not newer syntax: a real error
            out.extend("\n" for _ in chunk)
        except (RecursionError, MemoryError):
            return None
    out.extend(lines[row:])
    return "".join(out)


_CONTINUATIONS = frozenset({"else", "elif", "except", "finally"})
_CONTINUATION_LINE = re.compile(r"(?:else|elif|except|finally)\b")


def _column_zero_starts(text: str) -> List[int]:
    """0-based lines that start with code at column 0 (a decorated def from its first decorator)."""
    starts: List[int] = []
    decorated = False
    for row, line in enumerate(io.StringIO(text, newline="").readlines()):
        first = line[:1]
        if not first or first in " \t\f\r\n#)]}" or _CONTINUATION_LINE.match(line):
            continue
        if not decorated:
            starts.append(row)
        decorated = first == "@"
    return starts


def _statement_starts(text: str) -> Optional[List[int]]:
    """0-based first lines of the top-level statements (decorators included), the split libcst
    makes, from the tokenizer; None when this Python's tokenizer cannot read the file (e.g. 3.12
    f-strings on 3.11): then libcst decides."""
    starts: List[int] = []
    depth, line_start, decorated = 0, True, False
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            kind = token.type
            if kind == tokenize.INDENT:
                depth += 1
            elif kind == tokenize.DEDENT:
                depth -= 1
            elif kind == tokenize.NEWLINE:
                line_start = True
            elif kind == tokenize.ENDMARKER:
                break
            elif kind == tokenize.ERRORTOKEN:  # e.g. a lone \r, which `tokenize` does not end lines at
                return None
            elif line_start and kind not in (tokenize.NL, tokenize.COMMENT):
                line_start = False
                if depth == 0:
                    if decorated:  # the next decorator, or the decorated def/class
                        decorated = token.string == "@"
                    elif not (kind == tokenize.NAME and token.string in _CONTINUATIONS):
                        starts.append(token.start[0] - 1)
                        decorated = token.string == "@"
    except (tokenize.TokenError, SyntaxError):
        return None
    return starts


def _blank_statements(text: str, starts: List[int]) -> Optional[str]:
    """Blank each statement (from its first line to the next statement's) that `ast` rejects and
    libcst, whose grammar is newer, accepts; None when a statement is a real syntax error."""
    lines = io.StringIO(text, newline="").readlines()
    out: List[str] = lines[: starts[0]] if starts else lines
    for first, end in zip(starts, [*starts[1:], len(lines)]):
        chunk = lines[first:end]
        try:
            ast.parse("".join(chunk))
            out.extend(chunk)
            continue
        except SyntaxError as exc:
            if "too many" in (exc.msg or "") or "nested" in (exc.msg or ""):
                return None  # a limit every CPython has, not newer syntax: a real error
        except (RecursionError, MemoryError):
            return None
        if not _newer_grammar_reads("".join(chunk)):
            return None
        out.extend("\n" for _ in chunk)
    return "".join(out)


# `def f[T](...)`, `class C[T: int]:`, `type Alias[T] = ...`: the syntax of Python 3.12 that
# real code uses most. A statement that `ast` reads once its type parameters are removed (and
# whose parameters read as a signature's) is that syntax: no need to import libcst to know.
_TYPE_PARAMETERS = re.compile(r"\b(?:def|class)[ \t]+\w+[ \t]*\[|^[ \t]*type[ \t]+\w+[ \t]*[\[=]", re.MULTILINE)
_TYPE_ALIAS = re.compile(r"^([ \t]*)type[ \t]+(?=\w+[ \t]*[\[=])", re.MULTILINE)


def _newer_grammar_reads(chunk: str) -> bool:
    """Whether a statement `ast` rejects is one of newer syntax (libcst's grammar is newer)."""
    if _TYPE_PARAMETERS.search(chunk) and _parses(_without_type_parameters(chunk)):
        return True
    try:
        import libcst

        libcst.parse_module(chunk)
    except Exception:  # ImportError, libcst's ParserSyntaxError and its recursion failures alike
        return False
    return True


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


def _without_type_parameters(chunk: str) -> str:
    """`chunk` with each list of type parameters removed and `type X = ...` made `X = ...`;
    a list that would not read as a function's parameters is left, so that the result fails."""
    chunk = _TYPE_ALIAS.sub(r"\1", chunk)
    out: List[str] = []
    at = 0
    for match in _DEFINITION_PARAMETERS.finditer(chunk):
        if match.start() < at:
            continue
        close = _closing_bracket(chunk, match.end() - 1)
        params = chunk[match.end():close] if close > 0 else ""
        if close < 0 or "/" in params or not _parses(f"def _({params}): pass"):
            continue
        out.append(chunk[at:match.end() - 1])
        at = close + 1
    out.append(chunk[at:])
    return "".join(out)


_DEFINITION_PARAMETERS = re.compile(r"\b(?:def|class)[ \t]+\w+[ \t]*\[")
_BRACKETS = {"[": 1, "(": 1, "{": 1, "]": -1, ")": -1, "}": -1}


def _closing_bracket(text: str, opening: int) -> int:
    """The index of the bracket closing the one at `opening` (-1 if none, or a string is met first)."""
    depth = 0
    for i in range(opening, len(text)):
        c = text[i]
        if c in "'\"#":
            return -1
        depth += _BRACKETS.get(c, 0)
        if depth == 0:
            return i
    return -1


# `def name[T](...)` and `class Name[T]:` (PEP 695), which `ast` reads from Python 3.12 only.
_GENERIC_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)[ \t]*\[", re.MULTILINE)


# The same, by patterns that start with a literal (searched for, where `^` under MULTILINE is tried at
# every character: 0.11 s against 0.02 s on the JAX tree's 98 candidates, 8.6 MB).
_GENERIC_HINTS = (re.compile(r"def[ \t]+\w+[ \t]*\["), re.compile(r"class[ \t]+\w+[ \t]*\["))


def generic_definitions(text: str) -> "List[re.Match[str]]":
    """`list(_GENERIC_DEF.finditer(text))`: each hint's line is matched from its start, and kept
    when that match ends where the hint does (the hint is the line's own `def`/`class`)."""
    found = []
    for hint in _GENERIC_HINTS:
        for match in hint.finditer(text):
            line = _GENERIC_DEF.match(text, text.rfind("\n", 0, match.start()) + 1)
            if line is not None and line.end() == match.end():
                found.append(line)
    found.sort(key=lambda m: m.start())
    return found


def skipped_generic_statements(text: str, module: ast.Module, names: "Tuple[str, ...]") -> List[Tuple[int, int, str]]:
    """Where a parse on an interpreter older than the code left out a generic function or class
    (`parse` and the focused parse blank what `ast` cannot read) that holds one of `names` (the
    trigger names of custom-derivative code): (row, column, its name), so that a run can say the
    code there was not checked. Empty on Python 3.12 and newer, which read it."""
    import sys

    if sys.version_info >= (3, 12) or "[" not in text:
        return []
    matches = generic_definitions(text)
    if not matches:
        return []
    parsed = {node.lineno for node in ast.walk(module)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    lines = io.StringIO(text, newline="").readlines()
    words = re.compile(r"(?<![\w.])(?:\w+\.)*(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)") \
        if names else None
    out = []
    for match in matches:
        row = text.count("\n", 0, match.start()) + 1
        if row in parsed or words is None:
            continue
        indent = len(match.group(1).expandtabs())
        first = row - 1
        while first > 0 and lines[first - 1].strip().startswith("@") and \
                len(lines[first - 1]) - len(lines[first - 1].lstrip()) == len(match.group(1)):
            first -= 1  # its decorators
        last = row
        while last < len(lines):
            line = lines[last]
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and \
                    len(line.expandtabs()) - len(line.expandtabs().lstrip()) <= indent and \
                    not stripped.startswith((")", "]", "}")):
                break
            last += 1
        if words.search("".join(lines[first:last])):
            out.append((row, len(match.group(1)) + 1, match.group(3)))
    return out


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused meanwhile (and resumed if it ran before). A file's
    parse and analysis make hundreds of thousands of objects that live until its diagnostics are
    out and little cyclic garbage; the collector walked them all again and again as they grew
    (half the CPU of a 10 MB lint: `benchmarks/big_file.py`). Threads that pause it together
    leave it running once the last one that found it running is done."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_F = TypeVar("_F", bound=Callable[..., Any])


def gc_paused(fn: _F) -> _F:
    """`fn` run with the collector paused (`paused_gc`)."""
    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        with paused_gc():
            return fn(*args, **kwargs)
    return paused  # type: ignore[return-value]
