"""Quick-fix edits computed on the derivative's family of statements alone.

A planned fix (`Fix.plan`, a libcst module transform) costs time in the size of the module it
rewrites. The transform only needs the derivative's family (vjplint.lint.incremental: the statements
sharing names with it) and the imports, so it runs on a document of just those statements;
its edits are moved back to the rows of the real document. An edit that spans two of those
statements, or lands outside them, falls back to the whole document.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import Diagnostic, Edit, Position
from vjplint.lint.incremental import IncrementalLinter
from vjplint.syntax.positions import source_lines
from vjplint.fixes.apply import attach_fix_edits

RowMap = List[Tuple[int, int, int]]  # (first row in the family document, first row in the text, rows)


def attach_family_fixes(diagnostics: Sequence[Diagnostic], text: str, filename: str, config: Config,
                        linter: Optional[IncrementalLinter], facts: RunFacts = NO_FACTS) -> None:
    """Compute (in place) the edits of the diagnostics' planned fixes, as
    `vjplint.fixes.apply.attach_fix_edits` would on the whole `text`."""
    whole: List[Diagnostic] = []
    groups: Dict[Tuple[Tuple[int, int, int], ...], Tuple[List[str], RowMap, List[Diagnostic]]] = {}
    for d in diagnostics:
        plan = d.fix.plan if d.fix is not None else None
        family = linter.family_document(plan.line) if linter is not None and plan is not None else None
        if family is None:
            whole.append(d)
            continue
        lines, rows = family
        groups.setdefault(tuple(rows), (lines, rows, []))[2].append(d)
    for lines, rows, ds in groups.values():
        copies = []
        for d in ds:
            assert d.fix is not None and d.fix.plan is not None
            line = _to_family(d.fix.plan.line, rows)
            copies.append(replace(d, fix=replace(d.fix, plan=replace(d.fix.plan, line=line))))
        attach_fix_edits(copies, {filename: lines}, config, facts={filename: facts})
        for d, copy in zip(ds, copies):
            assert d.fix is not None and copy.fix is not None
            if not copy.fix.resolved:
                continue  # the whole document would not do better: the plan cannot be applied
            edits = [_to_text(e, rows) for e in copy.fix.edits]
            if all(e is not None for e in edits):
                d.fix = d.fix.with_edits(tuple(e for e in edits if e is not None))
            else:
                whole.append(d)
    if whole:
        attach_fix_edits(whole, {filename: source_lines(text)}, config, facts={filename: facts})


def _to_family(row: int, rows: RowMap) -> int:
    for there, here, count in rows:
        if here <= row < here + count:
            return row - here + there
    return row


def _to_text(edit: Edit, rows: RowMap) -> Optional[Edit]:
    """The edit in the real document's rows, or None when it leaves its statement's rows."""
    firsts = [there for there, _, _ in rows]
    k = bisect.bisect_right(firsts, edit.location.row) - 1
    if k < 0:
        return None
    there, here, count = rows[k]
    end = edit.end_location
    # An edit may end at the first column of the row after its statement's last (a whole line).
    if edit.location.row >= there + count or end.row > there + count or (end.row == there + count and end.column > 1):
        return None
    shift = here - there
    return Edit(edit.content, Position(edit.location.row + shift, edit.location.column),
                Position(end.row + shift, end.column))
