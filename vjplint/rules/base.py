"""The rule contract: one class per rule, reading the shared model, reporting nodes.

A rule never sees files, configuration or suppressions (fixit's discipline). It implements
`check_derivative(d)`, called for each custom derivative of the file, `check()` for what the
derivatives hold together, or `visit_<NodeType>` methods that the engine calls during one shared
traversal of the tree, or several of them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, ClassVar, FrozenSet, List, Optional, Sequence, Tuple

from vjplint.diagnostics import Applicability, Diagnostic, Edit, Evidence, Fix, FixElsewhere, FixPlan, Severity
from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.syntax.noqa import parse_noqa
from vjplint.syntax.positions import node_range
from vjplint.model.wrappers import with_wrapper_note


@dataclass
class Report:
    """A finding as a rule reports it, before it becomes a Diagnostic."""

    node: ast.AST
    message: str
    end_node: Optional[ast.AST] = None
    fix: Optional[Fix] = None
    default: bool = False  # kept when the rule is off but DEFAULT_REPORTS (see Rule)
    severity: Optional[Severity] = None  # a "may" below the rule's SEVERITY (unsure is a warning)
    evidence: Optional[Evidence] = None  # what was found, as data another rule or a fix reads (never the message)
    elsewhere: Optional[FixElsewhere] = None  # the fix, when its edits are in a rule's own file (another module)


# Lint a text with one rule: (code, text) -> that rule's diagnostics. The engine hands it to the
# rules (RuleOptions.relint) so that a fix can learn whether its result would draw a finding
# without the rules layer importing the engine above it.
Relint = Callable[[str, str], List[Diagnostic]]


@dataclass(frozen=True)
class RuleOptions:
    """What the engine hands every rule besides the model (the settings' name hints reach the
    facts at collection: `model.facts.hints`)."""

    relint: Optional[Relint] = None  # None: a fix's result is not linted again (its marks are not added)


class Rule:
    """Subclasses set the class attributes and document themselves in the docstring.

    The docstring has the sections `## What it does`, `## Why is this bad?`, `## Example`,
    `## Use instead` and `## Fix safety`; `vjplint rule CODE` prints it.
    """

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    SEVERITY: ClassVar[Severity]
    DEFAULT_ENABLED: ClassVar[bool] = True
    # An off-by-default rule whose reports made with `default=True` (cases that fail today) are on
    # by default: the engine runs it whenever it would run a default rule and keeps only those.
    DEFAULT_REPORTS: ClassVar[bool] = False
    # A stub (.pyi) declares an API without bodies or registrations: only rules about the
    # declaration itself run there (a hazard is reported where the function is implemented).
    IN_STUBS: ClassVar[bool] = False
    FIX: ClassVar[Optional[str]] = None  # a short name of the fix, when the rule has one
    # A runtime rule is reported by `vjplint check-grads` (which runs the user's code), never by linting.
    RUNTIME: ClassVar[bool] = False
    # Byte strings at least one of which a file must contain for the rule to possibly fire.
    TRIGGERS: ClassVar[Tuple[bytes, ...]] = ()
    # A pattern the text must match for the rule to possibly fire (None: any text): the name of
    # the API the rule is about, which every spelling that resolves to it writes somewhere in
    # the module (the import, the attribute). tests/unit/test_rule_triggers.py checks the gates
    # change no finding.
    NEEDS: ClassVar[Optional["re.Pattern[str]"]] = None
    # The derivatives `check_derivative` judges: their API (`CustomDerivative.api`: "jax", "nnx",
    # "linen", "equinox", "custom_gradient") and kind ("vjp", "jvp"); None: any. The engine calls
    # `check_derivative` only for those (tests/unit/test_rule_triggers.py checks the values).
    APIS: ClassVar[Optional[FrozenSet[str]]] = None
    KINDS: ClassVar[Optional[FrozenSet[str]]] = None
    # Source snippets (the rule's own test cases: INVALID must fire, VALID must not).
    VALID: ClassVar[List[str]] = []
    INVALID: ClassVar[List[str]] = []

    def __init__(self, model: FileModel, options: RuleOptions) -> None:
        self.model = model
        self.options = options
        self.reports: List[Report] = []

    def check(self) -> None:
        """Look at the whole model (the file's derivatives together, or what no derivative holds)."""

    def check_derivative(self, d: CustomDerivative) -> None:
        """Judge one custom derivative: the engine calls it for each of the file's derivatives of the
        rule's `APIS` and `KINDS`, in order, after `check` (the loop every derivative-level rule would
        otherwise repeat)."""

    def report(self, node: ast.AST, message: str, *, end_node: Optional[ast.AST] = None,
               fix: Optional[Fix] = None, default: bool = False, severity: Optional[Severity] = None,
               evidence: Optional[Evidence] = None) -> None:
        """Report `node` (to the end of `end_node` when given), with an optional fix made by
        `replacing`, `editing` or `planning`; `severity` lowers a finding the rule is unsure of;
        `evidence` says what was found as data, for whatever reads the finding besides a person."""
        elsewhere = None
        if self.model.facts.graft is not None:  # rules of other modules read here (crossmodule.Graft)
            message = self.model.facts.cite_grafted(message)
            if self.model.facts.grafted(node):  # reported on the registration, naming the def's file:line
                moved = self.model.facts.relocation(node)
                noqa = parse_noqa(self.model.lines[node.lineno - 1])  # type: ignore[attr-defined]
                if moved is None or noqa is not None and (noqa[0] is None or self.CODE in noqa[0] and not noqa[2]):
                    return  # a `# noqa` on the line in the rules' own file holds where they are registered too
                anchor, rule = moved
                display, row = self.model.facts.graft.origin.get(node.lineno, (rule.display, rule.line))  # type: ignore[attr-defined]
                elsewhere = self.model.facts.relocated_fix(fix) if fix is not None else None
                node, end_node, fix = anchor, None, None
                message += f" (in `{rule.name}` at {display}:{row})"
            elif fix is not None and any(e.location.row >= self.model.facts.graft.first_row
                                         or e.end_location.row >= self.model.facts.graft.first_row for e in fix.edits):
                elsewhere = self.model.facts.relocated_fix(fix)  # an edit of another module's text: applied there
                fix = None
        self.reports.append(Report(node, with_wrapper_note(self.model, node, message), end_node, fix, default,
                                   severity, evidence, elsewhere))

    # The three ways to make the one Fix type.
    def replacing(self, node: ast.AST, text: str, applicability: Applicability, message: str,
                  end_node: Optional[ast.AST] = None) -> Fix:
        """A fix that replaces the source of `node` (to the end of `end_node`) with `text`."""
        start, end = node_range(self.model.lines, node, end_node)
        return Fix(applicability, message, (Edit(text, start, end),))

    @staticmethod
    def editing(applicability: Applicability, message: str, edits: Sequence[Edit]) -> Fix:
        """A fix of explicit edits: rows and columns 1-based, columns in code points, end
        exclusive; `Edit("", Position(r, 1), Position(r + 1, 1))` deletes line r with its newline."""
        return Fix(applicability, message, tuple(edits))

    @staticmethod
    def planning(applicability: Applicability, message: str, plan: FixPlan) -> Fix:
        """A planned fix (vjplint.diagnostics.FixPlan) whose edits are computed when the fix is applied."""
        return Fix(applicability, message, plan=plan)

    # Helpers shared by many rules.
    def quote(self, node: ast.AST, limit: int = 60) -> str:
        return self.model.quote(node, limit)
