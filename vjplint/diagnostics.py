"""The values that flow out of the engine: diagnostics, their fixes and edits.

Positions are 1-based rows and 1-based columns (ruff's JSON convention); columns count
Unicode code points in the line. Formatters convert to whatever their format needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: Tuple[Edit, ...] = ()


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    severity: Severity
    filename: str
    location: Position
    end_location: Position
    # A fix is decided at lint time (applicability) but its edits are computed lazily by
    # the fix machinery; `fix` holds them once computed.
    fix_applicability: Optional[Applicability] = None
    fix_message: Optional[str] = None
    fix: Optional[Fix] = None
    noqa_row: Optional[int] = None
    # Opaque handle a fixer uses to find its target again (e.g. the derivative's name).
    fix_key: Optional[tuple] = field(default=None, compare=False, repr=False)

    @property
    def fixable(self) -> bool:
        return self.fix_applicability is not None

    @property
    def url(self) -> str:
        from vjplint.rules.registry import rule_url

        return rule_url(self.code)

    def sort_key(self) -> tuple:
        return (self.filename, self.location.row, self.location.column, self.code)
