"""The rule contract: one class per rule, reading the shared model, reporting nodes.

A rule never sees files, configuration or suppressions (fixit's discipline). It either
implements `check(model)` to walk the custom derivatives, or `visit_<NodeType>` methods that
the engine calls during one shared traversal of the tree, or both.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import ClassVar, List, Optional, Tuple

from vjplint.diagnostics import Applicability, Severity
from vjplint.infer import Hints
from vjplint.model import FileModel


@dataclass
class Report:
    node: ast.AST
    message: str
    fix_applicability: Optional[Applicability] = None
    fix_message: Optional[str] = None
    fix_key: Optional[tuple] = None
    end_node: Optional[ast.AST] = None
    replacement: Optional[str] = None  # new text for the reported node: a one-edit fix
    # Explicit edits, for fixes that do not replace exactly the reported node (e.g. deleting
    # whole lines): (start_row, start_col, end_row, end_col, new_text), rows and columns 1-based,
    # columns in code points, end exclusive. `(r, 1, r + 1, 1, "")` deletes line r with its newline.
    edits: Optional[List[Tuple[int, int, int, int, str]]] = None


@dataclass(frozen=True)
class RuleOptions:
    hints: Hints = Hints()
    target: str = "current"


class Rule:
    """Subclasses set the class attributes and document themselves in the docstring.

    The docstring has the sections `## What it does`, `## Why is this bad?`, `## Example`,
    `## Use instead` and `## Fix safety`; `vjplint rule CODE` prints it.
    """

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    SEVERITY: ClassVar[Severity]
    DEFAULT_ENABLED: ClassVar[bool] = True
    FIX: ClassVar[Optional[str]] = None  # a short name of the fix, when the rule has one
    # Byte strings at least one of which a file must contain for the rule to possibly fire.
    TRIGGERS: ClassVar[Tuple[bytes, ...]] = ()
    # Source snippets (the rule's own test cases: INVALID must fire, VALID must not).
    VALID: ClassVar[List[str]] = []
    INVALID: ClassVar[List[str]] = []

    def __init__(self, model: FileModel, options: RuleOptions) -> None:
        self.model = model
        self.options = options
        self.reports: List[Report] = []

    def check(self) -> None:
        """Walk the model; override for derivative-level rules."""

    def report(self, node: ast.AST, message: str, *, fix: Optional[Applicability] = None,
               fix_message: Optional[str] = None, fix_key: Optional[tuple] = None,
               end_node: Optional[ast.AST] = None, replacement: Optional[str] = None,
               edits: Optional[List[Tuple[int, int, int, int, str]]] = None) -> None:
        """Report `node`. A fix is either `replacement` (new text for the node), explicit `edits`
        (see `Report.edits`), or a `fix_key` naming a transform in `vjplint.fixes` that rewrites
        the module."""
        self.reports.append(Report(node, message, fix, fix_message, fix_key, end_node, replacement, edits))

    # Helpers shared by many rules.
    def quote(self, node: ast.AST, limit: int = 60) -> str:
        from vjplint.infer import _Quoter

        return _Quoter(self.model)(node, limit)
