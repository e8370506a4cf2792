"""Jupyter notebooks as one Python module, and fixed code written back into their cells.

The code cells are concatenated in notebook order (a custom_vjp in one cell and its defvjp in a
later one are one module), each after a marker comment line that says which cell follows, so
that any text derived from it (a fixed text, a cached file read again) maps back to (cell, line)
by itself. IPython magics and shell escapes (`%timeit`, `!pip`, `x = !ls`, `obj?`) become `pass`
statements carrying their number (valid wherever a statement is, at the same indentation); they
are put back when cells are written. Cell magics whose body is not Python (`%%bash`, `%%html`)
leave their cell out. Writing edits only the `source` values of the cells that changed, in the
notebook's own layout, so that every other byte of the JSON stays as it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from vjplint.diagnostics import Diagnostic, Position

SUFFIX = ".ipynb"
MARKER = "# %% vjplint: cell {}"  # a jupytext-style cell line: plain Python, kept by every fix
_MARKER_RE = re.compile(r"# %% vjplint: cell (\d+)\Z")
_MAGIC_RE = re.compile(r"(\s*)pass  # vjplint: magic (\d+)\Z")
# Cell magics whose body is Python (IPython runs it): only their first line is a magic.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# Line magics IPython also runs without their `%` (automagic), as in `timeit -n 5 f(x)`.
AUTOMAGICS = frozenset({"timeit", "time", "pip", "conda", "matplotlib", "load_ext", "reload_ext", "autoreload",
                        "env", "cd", "prun", "run", "who", "whos", "config", "pdb", "store", "reset"})
_ESCAPE_RE = re.compile(r"\s*(?:[!%?]|[A-Za-z_][\w.]*\s*=\s*[!%][A-Za-z!])|\s*[A-Za-z_][\w.]*\?\??\s*\Z")


class NotebookError(ValueError):
    """Not a notebook this module can read, or fixed text it cannot put back into cells."""


@dataclass(frozen=True)
class NotebookSource:
    """A notebook's code cells as one Python text, with what is needed to write cells back."""

    text: str
    cells: Tuple[int, ...]  # the 1-based notebook cell number of each cell in `text`, in order
    sources: Tuple[str, ...]  # each of those cells' source, as in the notebook
    magics: Tuple[str, ...]  # magic number -> its original line (without the line break)


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


# -- reading ----------------------------------------------------------------------------------------
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> List[str]:
    """Lines as Python's tokenizer sees them (vjplint.syntax.positions): only \\r\\n, \\r and \\n break a
    line; str.splitlines would also break at form feeds and U+2028 inside a cell's strings."""
    lines = _LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def python_bytes(name: str, data: bytes) -> bytes:
    """What is linted of a file: its bytes, or a notebook's Python text (raises NotebookError)."""
    return read(data).text.encode("utf-8") if is_notebook(name) else data


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotebookError("a cell's source is neither a string nor a list of strings")


def _load(data: bytes) -> dict:
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"not a Jupyter notebook (invalid JSON: {exc})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (no `cells` list)")
    return notebook


def is_python(notebook: dict) -> bool:
    """A notebook without a language says nothing: Python, as Jupyter's default kernel."""
    metadata = notebook.get("metadata") or {}
    language = ((metadata.get("kernelspec") or {}).get("language")
                or (metadata.get("language_info") or {}).get("name") or "python")
    return isinstance(language, str) and language.lower() == "python"


def read(data: bytes) -> NotebookSource:
    """The Python text of a notebook's code cells (empty for a notebook in another language)."""
    notebook = _load(data)
    if not is_python(notebook):
        return NotebookSource("", (), (), ())
    lines: List[str] = []
    cells: List[int] = []
    sources: List[str] = []
    magics: List[str] = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = _cell_source(cell)
        python = _python_lines(source, magics)
        if python is None:
            continue
        cells.append(number)
        sources.append(source)
        lines.append(MARKER.format(number))
        lines.extend(python)
    text = "\n".join(lines) + "\n" if lines else ""
    return NotebookSource(text, tuple(cells), tuple(sources), tuple(magics))


def _python_lines(source: str, magics: List[str]) -> Optional[List[str]]:
    """The cell's lines with its magics replaced (numbered into `magics`), or None when the cell
    is not Python (a cell magic such as %%bash)."""
    lines = split_lines(source)
    first = lines[0].lstrip() if lines else ""
    if first.startswith("%%") and (first[2:].split() or [""])[0] not in PYTHON_CELL_MAGICS:
        return None
    # Most cells have no line that could be a magic: then none is one, and the character scan
    # that tells a magic from a `%` inside brackets or a string (most of reading a notebook) is moot.
    if not any(_ESCAPE_RE.match(line) is not None or _automagic(line) for line in lines):
        return lines
    out: List[str] = []
    depth, continued, in_string, indent = 0, False, "", ""
    for line in lines:
        magic = continued or (depth == 0 and not in_string and (_ESCAPE_RE.match(line) is not None
                                                                or _automagic(line)))
        if magic:
            if not continued:  # a magic's continuation lines keep its indentation (the block goes on)
                indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}pass  # vjplint: magic {len(magics)}")
            magics.append(line)
            continued = line.endswith("\\")  # IPython joins a magic's backslash-continued lines
            continue
        out.append(line)
        depth, in_string = _scan(line, depth, in_string)
    return out


def _automagic(line: str) -> bool:
    """`timeit -n 5 f(x)`: a magic's name, then arguments that are not Python (`time = 3` is)."""
    words = line.split(None, 1)
    if len(words) < 2 or words[0] not in AUTOMAGICS:
        return False
    try:
        compile(line.strip(), "<cell>", "exec")
    except SyntaxError:
        return True
    return False


def _scan(line: str, depth: int, in_string: str) -> Tuple[int, str]:
    """Bracket depth and open triple-quoted string after `line`: a `%` or `!` that starts a line
    inside brackets or a string is Python (a modulo, a comparison, text), not a magic."""
    i, n = 0, len(line)
    while i < n:
        if in_string:
            end = line.find(in_string, i)
            if end < 0:
                return depth, in_string
            i, in_string = end + 3, ""
            continue
        c = line[i]
        if c == "#":
            break
        if c in "\"'":
            if line.startswith(c * 3, i):
                in_string, i = c * 3, i + 3
                continue
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        i += 1
    return depth, in_string


# -- positions --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellMap:
    """Rows of a notebook's Python text -> (cell number, row in the cell), from its marker lines."""

    starts: Tuple[int, ...]  # the text row of each cell's marker line, ascending
    cells: Tuple[int, ...]

    @classmethod
    def of(cls, lines: Sequence[str]) -> "CellMap":
        starts, cells = [], []
        for row, line in enumerate(lines, start=1):
            match = _MARKER_RE.match(line.rstrip("\r\n"))
            if match:
                starts.append(row)
                cells.append(int(match.group(1)))
        return cls(tuple(starts), tuple(cells))

    def locate(self, row: int) -> Tuple[Optional[int], int]:
        """(cell, row in that cell); a row before the first marker counts as the first cell's."""
        if not self.starts:
            return None, row
        index = max(0, _bisect(self.starts, row) - 1)
        return self.cells[index], max(1, row - self.starts[index])

    def position(self, p: Position) -> Position:
        return Position(self.locate(p.row)[1], p.column)

    def cell_lines(self, lines: Sequence[str], cell: int) -> List[str]:
        """The lines of one cell (as linted: magics are `pass` lines)."""
        if cell not in self.cells:
            return []
        index = self.cells.index(cell)
        end = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(lines)
        return list(lines[self.starts[index]:end])


def _bisect(starts: Sequence[int], row: int) -> int:
    lo, hi = 0, len(starts)
    while lo < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= row:
            lo = mid + 1
        else:
            hi = mid
    return lo


def to_cells(diagnostics: Sequence[Diagnostic], cell_map: CellMap) -> List[Diagnostic]:
    """Diagnostics on a notebook's Python text with their rows in their cell and `cell` set. Fix
    edits keep the text's rows: fixes are applied to that text (vjplint.cli.fix), and the
    formatters map the edits they print (CellMap.position)."""
    out = []
    for d in diagnostics:
        cell, row = cell_map.locate(d.location.row)
        end = cell_map.locate(d.end_location.row)
        end_location = (Position(end[1], d.end_location.column) if end[0] == cell
                        else Position(row, d.location.column + 1))  # a range across cells ends in its first
        noqa = cell_map.locate(d.noqa_row)[1] if d.noqa_row is not None else None
        out.append(replace(d, message=cell_lines_in(d.message, cell_map, cell),
                           location=Position(row, d.location.column), end_location=end_location,
                           noqa_row=noqa, cell=cell))
    return out


_LINE_REF = re.compile(r"\bline (\d+)\b")


def cell_lines_in(message: str, cell_map: CellMap, cell: Optional[int]) -> str:
    """A message's evidence (`called at line 300`) in the notebook's terms: rows of the text the
    rules saw become rows of their cell, with the cell named when it is another one."""
    def one(match: "re.Match[str]") -> str:
        other, row = cell_map.locate(int(match.group(1)))
        return f"line {row}" if other == cell or other is None else f"cell {other}, line {row}"
    return _LINE_REF.sub(one, message)


# -- writing ----------------------------------------------------------------------------------------
def cells_of(text: str, source: NotebookSource) -> Dict[int, str]:
    """The cells a fixed `text` changes: cell number -> new source, magics put back. Raises
    NotebookError when the cell markers or the magics did not come through unchanged."""
    lines = split_lines(text)
    cell_map = CellMap.of(lines)
    if cell_map.cells != source.cells:
        raise NotebookError("the fix moved or removed cell boundaries; the notebook is left unchanged")
    head = lines[:cell_map.starts[0] - 1] if cell_map.starts else []  # text a fix put above cell 1
    seen: List[int] = []
    changed: Dict[int, str] = {}
    for index, (number, old) in enumerate(zip(source.cells, source.sources)):
        body = cell_map.cell_lines(lines, number)
        if index == 0:
            body = head + body
        restored = []
        for line in body:
            match = _MAGIC_RE.match(line)
            if match:
                seen.append(int(match.group(2)))
                line = source.magics[int(match.group(2))]
            restored.append(line)
        sep = "\r\n" if "\r\n" in old else "\r" if "\r" in old else "\n"  # the cell's own line breaks
        new = sep.join(restored)
        new = new.rstrip("\r\n") + old[len(old.rstrip("\r\n")):]  # a cell ends as it ended (usually no break)
        if new != old:
            changed[number] = new
    if sorted(seen) != list(range(len(source.magics))):
        raise NotebookError("the fix removed or copied an IPython magic line; the notebook is left unchanged")
    return changed


def write(data: bytes, changed: Dict[int, str]) -> bytes:
    """The notebook's bytes with the `source` of each changed cell replaced, in the layout the
    file uses (a list of lines or one string, its indentation, its escaping); nothing else moves."""
    if not changed:
        return data
    bom = data.startswith(b"\xef\xbb\xbf")
    raw = data.decode("utf-8-sig")
    spans = _source_spans(raw)
    ascii_only = raw.isascii() and "\\u" in raw
    unit = _indent_unit(raw)
    out, last = [], 0
    for number in sorted(changed):
        if number not in spans:
            raise NotebookError(f"cell {number} has no `source` to rewrite")
        start, end, key_indent = spans[number]
        out.append(raw[last:start])
        out.append(_format_source(raw[start:end], changed[number], key_indent, unit, ascii_only))
        last = end
    out.append(raw[last:])
    text = "".join(out)
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def _format_source(old: str, new: str, key_indent: str, unit: str, ascii_only: bool) -> str:
    dump = lambda s: json.dumps(s, ensure_ascii=ascii_only)  # noqa: E731
    if old.startswith('"'):
        return dump(new)
    parts = new.splitlines(keepends=True)
    if not parts:
        return "[]"
    inner = re.match(r"\[(\s*)", old)
    close = re.search(r"(\s*)\]\Z", old)
    lead = inner.group(1) if inner and old.strip() != "[]" else "\n" + key_indent + unit
    tail = close.group(1) if close and old.strip() != "[]" else "\n" + key_indent
    if "\n" not in lead:  # one line: ["a\n", "b"]
        return "[" + lead + ", ".join(dump(p) for p in parts) + tail + "]"
    return "[" + lead + ("," + lead).join(dump(p) for p in parts) + tail + "]"


def _indent_unit(raw: str) -> str:
    match = re.search(r"\A\{\r?\n([ \t]+)\"", raw)
    return match.group(1) if match else " "


_WS = re.compile(r"[ \t\r\n]*")


def _source_spans(raw: str) -> Dict[int, Tuple[int, int, str]]:
    """cell number -> (start, end) of its `source` value in the JSON text, and the indentation of
    the line holding the key. A small walk over the top-level object and the `cells` array: the
    values it does not need are skipped with the standard decoder (which knows their end)."""
    decoder = json.JSONDecoder()
    spans: Dict[int, Tuple[int, int, str]] = {}

    def skip_ws(i: int) -> int:
        return _WS.match(raw, i).end()  # type: ignore[union-attr]

    def members(i: int):
        """(key, value start, value end) of the object starting at raw[i] == '{'; returns the end."""
        i = skip_ws(i + 1)
        items = []
        while raw[i] != "}":
            key, i = json.decoder.scanstring(raw, i + 1)  # type: ignore[attr-defined]
            i = skip_ws(skip_ws(i) + 1)  # past ':'
            start = i
            _, i = decoder.raw_decode(raw, i)
            items.append((key, start, i))
            i = skip_ws(i)
            if raw[i] == ",":
                i = skip_ws(i + 1)
        return items, i + 1

    try:
        top, _ = members(skip_ws(0))
        for key, start, _end in top:
            if key != "cells":
                continue
            i = skip_ws(start + 1)
            number = 0
            while raw[i] != "]":
                number += 1
                fields, i = members(i)
                for name, s, e in fields:
                    if name == "source":
                        line = raw[raw.rfind("\n", 0, s) + 1:s]
                        indent = line[:len(line) - len(line.lstrip())]
                        spans[number] = (s, e, indent)
                i = skip_ws(i)
                if raw[i] == ",":
                    i = skip_ws(i + 1)
    except (ValueError, IndexError) as exc:
        raise NotebookError(f"cannot locate the cells in the notebook's JSON: {exc}") from None
    return spans
