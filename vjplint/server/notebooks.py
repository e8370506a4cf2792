"""Notebook documents (LSP 3.17 `notebookDocument/*`): code cells linted as one module, in
order, as `vjplint.syntax.notebook` reads an .ipynb file (a marker line before each cell, magics
blanked), and the findings handed back per cell with cell-relative positions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from vjplint.diagnostics import Diagnostic, Position
from vjplint.syntax.notebook import MARKER, CellMap, cell_lines_in, _python_lines
from vjplint.syntax.positions import source_lines


@dataclass(frozen=True)
class NotebookText:
    text: str
    cell_map: CellMap
    uris: Dict[int, str]  # cell number (1-based, in the notebook's order, markdown cells counted) -> cell URI
    cell_lines: Dict[str, List[str]]  # cell URI -> its lines as linted (magics are `pass` lines)


def notebook_text(cells: Sequence[Tuple[str, bool, str]]) -> NotebookText:
    """`cells`: (URI, whether it is a Python code cell, its text) in the notebook's order."""
    lines: List[str] = []
    uris: Dict[int, str] = {}
    cell_lines: Dict[str, List[str]] = {}
    magics: List[str] = []
    for number, (uri, python, source) in enumerate(cells, start=1):
        if not python:
            continue
        converted = _python_lines(source, magics)
        if converted is None:  # a cell magic whose body is not Python (%%bash)
            continue
        uris[number] = uri
        cell_lines[uri] = converted
        lines.append(MARKER.format(number))
        lines.extend(converted)
    text = "\n".join(lines) + "\n" if lines else ""
    return NotebookText(text, CellMap.of(source_lines(text)), uris, cell_lines)


def per_cell(diagnostics: Sequence[Diagnostic], notebook: NotebookText) -> Dict[str, List[Diagnostic]]:
    """Each code cell's diagnostics, with rows in the cell (every code cell has an entry, so that
    publishing clears the cells that are clean now)."""
    out: Dict[str, List[Diagnostic]] = {uri: [] for uri in notebook.uris.values()}
    for d in diagnostics:
        cell, row = notebook.cell_map.locate(d.location.row)
        uri = notebook.uris.get(cell) if cell is not None else None
        if uri is None:
            continue
        end_cell, end_row = notebook.cell_map.locate(d.end_location.row)
        end = Position(end_row, d.end_location.column) if end_cell == cell else Position(row, d.location.column + 1)
        moved = object.__new__(Diagnostic)
        moved.__dict__.update(d.__dict__)
        moved.location, moved.end_location, moved.cell = Position(row, d.location.column), end, cell
        moved.message = cell_lines_in(d.message, notebook.cell_map, cell)
        moved.noqa_row = notebook.cell_map.locate(d.noqa_row)[1] if d.noqa_row is not None else None
        moved.fix = None  # quick fixes in notebooks: not offered (edits would span cells)
        out[uri].append(moved)
    return out
