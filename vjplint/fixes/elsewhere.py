"""Fixes whose edits lie in another file of the run: a finding in a fwd/bwd/jvp rule that one
module registers and another defines (vjplint.facts.crossmodule.Graft) is reported where the
rule is registered, and its fix (`Diagnostic.elsewhere`, a `FixElsewhere`) edits the module
where the rule is written.

Pure: the run's diagnostics and a reader of texts in, new texts out. `vjplint --fix` writes the
files together (vjplint.fixes.multi_write: all or none) and lints again; `--diff` shows them; the
Language Server offers each as a quick fix whose WorkspaceEdit names the rules' file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from vjplint.diagnostics import Applicability, Diagnostic, Edit, FixElsewhere
from vjplint.fixes.edits import Taken, apply_spans, line_starts, spans
from vjplint.syntax.source import SourceError, parse


@dataclass
class ElsewhereFix:
    """What the run's fixes of other files do: `texts[target]` = (old, new); `fixed[display]`:
    the diagnostics of each registering file whose fix was made; `refused`: (target, why)."""

    texts: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    fixed: Dict[str, List[Diagnostic]] = field(default_factory=dict)
    refused: List[Tuple[str, str]] = field(default_factory=list)


def offered_elsewhere(d: Diagnostic, unsafe: bool) -> Optional[FixElsewhere]:
    """The fix of `d` in another file that this run may apply: safe ones always, unsafe ones with
    --unsafe-fixes; never one another module of the run makes unsafe (`unsafe_because`) without it."""
    elsewhere = d.elsewhere
    if elsewhere is None or not elsewhere.fix.edits:
        return None
    return elsewhere if elsewhere.fix.applicability is Applicability.SAFE or unsafe else None


def fix_elsewhere(found: Sequence[Tuple[str, Diagnostic]], unsafe: bool,
                  read: Callable[[str], Optional[str]]) -> ElsewhereFix:
    """Apply the fixes of other files that `found` ((display of the file reporting it, its
    diagnostic)) offers, each target file once: identical edits from two registering modules
    count once, an edit overlapping one already taken waits for the next run, and a target whose
    result does not parse keeps its text (its fixes are refused)."""
    by_target: Dict[str, List[Tuple[str, Diagnostic, Tuple[Edit, ...]]]] = {}
    for display, d in found:
        elsewhere = offered_elsewhere(d, unsafe)
        if elsewhere is not None:
            by_target.setdefault(elsewhere.path, []).append((display, d, elsewhere.fix.edits))
    result = ElsewhereFix()
    for target, fixes in by_target.items():
        old = read(target)
        if old is None:
            result.refused.append((target, "it cannot be read"))
            continue
        starts = line_starts(old)
        taken = Taken()
        chosen: List[Tuple[int, int, str]] = []
        seen: Dict[Tuple[Tuple[int, int, str], ...], bool] = {}
        made: List[Tuple[str, Diagnostic]] = []
        for display, d, edits in sorted(fixes, key=lambda f: (f[2][0].location.row, f[2][0].location.column)):
            try:
                wanted = tuple(spans(old, starts, edits))
            except (IndexError, ValueError):
                continue
            if any(s[0] > s[1] or s[1] > len(old) for s in wanted):
                continue
            if wanted in seen:  # the same rule registered in two modules: one edit
                if seen[wanted]:
                    made.append((display, d))
                continue
            ok = not any(taken.conflicts(s) for s in wanted)
            seen[wanted] = ok
            if ok:
                for s in wanted:
                    taken.add(s)
                chosen.extend(wanted)
                made.append((display, d))
        if not chosen:
            continue
        new = apply_spans(old, chosen)
        try:
            parse(new)
        except SourceError as exc:
            result.refused.append((target, f"the fixed text does not parse: {exc}"))
            continue
        result.texts[target] = (old, new)
        for display, d in made:
            result.fixed.setdefault(display, []).append(d)
    return result
