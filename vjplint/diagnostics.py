"""The values that flow out of the engine: diagnostics, their fixes and edits.

Positions are 1-based rows and 1-based columns (ruff's JSON convention); columns count
Unicode code points in the line. Formatters convert to whatever their format needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional, Tuple


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    row: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions with `content`."""

    content: str
    location: Position
    end_location: Position


def edit_order(edit: Edit) -> tuple:
    """The order of edits in a file: by start, then end, then content."""
    return (edit.location.row, edit.location.column, edit.end_location.row, edit.end_location.column, edit.content)


@dataclass(frozen=True)
class FixPlan:
    """A fix that is a module transform (vjplint.fixes): its edits are computed when needed, from
    the file's text at that moment, by the transform named here for the derivative defined at
    (`target`, `line`). `positions` are what the transform moves (e.g. nondiff argument indices)."""

    transform: str
    target: str
    line: int
    positions: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Fix:
    """The one fix type: how safe it is, what it does, and its edits, or, for a module transform,
    the plan that computes them (`edits` is then empty until vjplint.fixes resolves it)."""

    applicability: Applicability
    message: str
    edits: Tuple[Edit, ...] = ()
    plan: Optional[FixPlan] = None

    @property
    def resolved(self) -> bool:
        return bool(self.edits)

    def with_edits(self, edits: Tuple[Edit, ...]) -> "Fix":
        return Fix(self.applicability, self.message, edits, self.plan)


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    severity: Severity
    filename: str
    location: Position
    end_location: Position
    fix: Optional[Fix] = None
    noqa_row: Optional[int] = None
    cell: Optional[int] = None  # a notebook's 1-based cell number: rows are then the cell's (vjplint.syntax.notebook)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)
