"""The values that flow out of the engine: diagnostics, their fixes and edits.

Positions are 1-based rows and 1-based columns (ruff's JSON convention); columns count
Unicode code points in the line. Formatters convert to whatever their format needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar, Literal, Mapping, Optional, Protocol, Sequence, Tuple


# A dataclass field marked so (`metadata={CARRIED: True}`) travels with its value in the process
# (and to the workers) but is not written by the result cache (vjplint.batch.cache).
CARRIED = "vjplint.carried"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based row and column."""

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


class FixPlan(ABC):
    """A fix whose edits are computed when needed, from the file's text at that moment: a rewrite
    of the derivative defined at (`target`, `line`). Each kind of fix a rule makes is a frozen
    dataclass here (hashable: several diagnostics share one plan; the result cache revives only
    this module's classes; a kind the fix layer makes lives there: `fixes/cross_plan.CrossPlan`),
    and gives its edits through `edits`, the one way every caller (the fix loop, `--diff`,
    JSON/SARIF/LSP edits, the editor's quick fixes, the cross-module rewrite) asks for them."""

    kind: ClassVar[str]  # what messages call the fix ("the residual-plus-None fix failed: ...")
    target: str
    line: int

    @classmethod
    @abstractmethod
    def edits(cls, text: str, plans: Sequence["FixPlan"], context: "FixContext", alone: bool = False) -> "Rewrite":
        """The rewrite of `text` making `plans` (all of this kind) together: its edits and the
        plans it made. With `alone`, each plan's own edits instead (`Rewrite.alone`), as one
        diagnostic's fix applies them by itself. Raises what the rewrite raises, except with
        `alone` (a plan that fails has no edits)."""


@dataclass(frozen=True)
class ResidualPlusNone(FixPlan):
    """Move the nondiff arguments at `positions` into the residuals (bwd returns None for
    them): `vjplint.plans.residual_plan` plans it, `vjplint.fixes.apply` writes it.

    `planned` is the rule's plan (a `residual_plan.Plan`), made when the file was linted, and
    `planned_on` the digest of the lines it was made from (`residual_plan.lines_digest`): the
    writer uses it as it is while the text is the same, and plans again from the text when it
    changed (an editor's stale quick fix) or when several plans of a derivative are merged. Both
    are carried, not compared: equal plans are one fix whoever made them, and neither is kept
    by the result cache (`CARRIED`; a revived fix plans again)."""

    kind: ClassVar[str] = "residual-plus-None"
    target: str
    line: int
    positions: Tuple[int, ...] = ()
    planned: Optional[Any] = field(default=None, compare=False, repr=False, metadata={CARRIED: True})
    planned_on: str = field(default="", compare=False, repr=False, metadata={CARRIED: True})

    @classmethod
    def edits(cls, text: str, plans: Sequence[FixPlan], context: "FixContext", alone: bool = False) -> "Rewrite":
        return context.residual_plus_none(text, plans, alone)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Rewrite:
    """What planned fixes make of a text. `edits`: the edits of the one rewrite making every plan
    (empty when the text does not change), `made`: the plans it made, `text`: the rewritten text.
    `alone` (when asked for): each plan's own edits, empty when it cannot be made by itself or
    would leave code that does not parse."""

    edits: Tuple[Edit, ...] = ()
    made: Tuple[FixPlan, ...] = ()
    text: Optional[str] = None
    alone: Mapping[FixPlan, Tuple[Edit, ...]] = field(default_factory=dict)


class FixContext(Protocol):
    """What a plan's edits need beside the text, for one file: its settings, what the run derives
    about it, the lint session whose parse of the text may be read, its path (for a rewrite over
    several files); and a writer for each kind of plan defined in this module
    (`vjplint.fixes.apply.FileContext`). A new kind of fix adds its plan class and, when the
    plan is made below the fix layer (by a rule), its writer here."""

    @property
    def path(self) -> Optional[Any]: ...

    def residual_plus_none(self, text: str, plans: Sequence[ResidualPlusNone], alone: bool = False) -> Rewrite:
        ...


@dataclass(frozen=True)
class Fix:
    """The one fix type: how safe it is, what it does, and its edits, or, for a planned fix, the
    plan that computes them (`edits` is then empty until vjplint.fixes resolves it)."""

    applicability: Applicability
    message: str
    edits: Tuple[Edit, ...] = ()
    plan: Optional[FixPlan] = None
    # why another module of the run or workspace makes this fix unsafe (it calls the rule the fix
    # changes: vjplint.fixes.named_elsewhere); such a fix is never applied by fix-all
    unsafe_because: Optional[str] = None

    @property
    def resolved(self) -> bool:
        return bool(self.edits)

    def with_edits(self, edits: Tuple[Edit, ...]) -> "Fix":
        return replace(self, edits=edits)


@dataclass(frozen=True)
class FixElsewhere:
    """A fix of a finding whose edits lie in another file of the run: the finding is in a rule
    registered in the diagnostic's file and defined in `path` (a display path, as the run shows
    that file: vjplint.facts.crossmodule.Graft), so the fix edits `path`, never the diagnostic's
    own file (whose `fix` stays None). `--fix` and the editor's quick fix apply it there
    (vjplint.fixes.elsewhere)."""

    path: str
    fix: Fix


# -- what a rule found, as data another rule, a fix or the run reads (never its message's words) ----
@dataclass(frozen=True)
class Evidence:
    """A typed account of a finding, attached by the rule beside its message
    (`Diagnostic.evidence`): what a fix that predicts the rule's finding on its rewrite, or a later
    stage of the run, reads. Output formats never show it; the result cache keeps it."""


@dataclass(frozen=True)
class DroppedCotangent(Evidence):
    """VJP602: bwd `bwd` of custom_vjp `function` returns `None` or a zero (`returned`: "none" or
    "zero") for `params`, which the primal's output depends on (`why`: "output") or for which the
    bwd's own code shows a cotangent was meant ("bwd": a local, a residual or the cotangent never
    read; "dead": a value computed from the cotangent that reaches no return)."""

    bwd: str
    function: str
    params: Tuple[str, ...]
    returned: Literal["none", "zero"]
    why: Literal["output", "bwd", "dead"]  # a tag, compared as such (tests/unit/test_evidence_not_words.py)


@dataclass(frozen=True)
class SlopeDisagrees(Evidence):
    """VJP610: the rule of custom derivative `function` gives, for `param`, a derivative that
    disagrees with the primal's slope at every sample point (`zero`: it gives none at all)."""

    function: str
    param: str
    zero: bool


@dataclass(frozen=True)
class NoneTangentRule(Evidence):
    """VJP609: `function.defjvps(...)` gives `None` as the tangent rule for `param`, which the
    primal's output depends on."""

    function: str
    param: str


@dataclass(frozen=True)
class NoAutomaticFix(Evidence):
    """A finding offered without a fix, and why (`reason`); its message says so after its first
    `head` characters (the part a later stage may replace, vjplint.cli.fix_cross)."""

    reason: str
    head: int


@dataclass
class Diagnostic:
    """One finding: its rule, message, span and fix."""

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
    evidence: Optional[Evidence] = None  # what the rule found, as data (never shown: output formats read the message)
    elsewhere: Optional[FixElsewhere] = None  # its fix, when it edits another file of the run

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)
