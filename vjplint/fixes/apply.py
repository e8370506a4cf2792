"""The fix machinery every rule shares: choose fixes, apply non-overlapping edits per pass,
re-lint and repeat until stable. Pure: text in, text out; reading and writing files is the
surfaces' business (vjplint.cli.fix, the Language Server).

`apply_fixes(text, diagnostics, unsafe)` makes one pass, `fix_text(filename, text, config, unsafe)`
runs passes to a fixed point, `attach_fix_edits()` computes the edits of planned fixes
(`Fix.plan`) for JSON/SARIF/LSP output. Every caller asks a plan for its edits the one way
(`FixPlan.edits(text, plans, context)`); `FileContext` is the context, and writes each kind.
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.lint.session import LintSession
from vjplint.diagnostics import Applicability, Diagnostic, DroppedCotangent, Edit, FixPlan, Position, ResidualPlusNone, Rewrite
from vjplint.fixes.edits import Taken, apply_edits, apply_spans, diff_edits, line_starts, spans
from vjplint.syntax.positions import lines_with_endings, source_lines
from vjplint.syntax.source import SourceError, parse
from vjplint.facts.collect import Recognizer, collect
from vjplint.fixes.noqa import apply_line_edit, noqa_edit
from vjplint.fixes.targets import model_of, target_of
from vjplint.lint.engine import prefilter_names
from vjplint.plans.residual_plan import KEPT_NONDIFF, Plan, Refusal, lines_digest, plan
from vjplint.syntax.regions import focus

MAX_PASSES = 10


@dataclass(frozen=True)
class FileContext:
    """What a plan's edits need beside one file's text (vjplint.diagnostics.FixContext): its
    settings, what the run derives about it, the lint session whose kept parse of the text the
    rewrite may read, its path (a cross-module rewrite's parts are per file); and the writer of
    each kind of plan made below this layer."""

    config: Config = Config()
    facts: RunFacts = NO_FACTS
    session: Optional[LintSession] = None
    path: Optional[Any] = None

    def residual_plus_none(self, text: str, plans: Sequence[ResidualPlusNone], alone: bool = False) -> Rewrite:
        if alone:
            return Rewrite(alone=self._residual_alone(text, plans))
        found: List[Edit] = []
        new_text, rows, _ = _residual_rewrite(text, plans, self.config, found, facts=self.facts, session=self.session)
        made = tuple(fp for fp in plans if (fp.target, fp.line) in rows)
        # the edits the rewrite knows, else a diff
        edits = (tuple(found) or diff_edits(text, new_text)) if new_text != text else ()
        return Rewrite(edits, made, new_text)

    def _residual_alone(self, text: str, plans: Sequence[ResidualPlusNone]) -> Dict[FixPlan, Tuple[Edit, ...]]:
        """Each plan's own edits: from one rewrite of the whole file split by derivative when there
        are several (`_edits_per_plan`), else (or where the split fails) its rewrite alone."""
        distinct = list(dict.fromkeys(plans))
        shares: Dict[FixPlan, Tuple[Edit, ...]] = {}
        if len(distinct) >= 2:
            try:
                shares = dict(_edits_per_plan(text, distinct, self.config, self.facts, self.session))
            except Exception:
                shares = {}
        for fp in distinct:
            if fp in shares:
                continue
            edits: Tuple[Edit, ...] = ()
            try:
                done = self.residual_plus_none(text, [fp])
                if done.made and done.text is not None and _parses(done.text):
                    edits = done.edits
            except Exception:
                edits = ()
            shares[fp] = edits
        return shares


def _residual_rewrite(text: str, fix_plans: Sequence[ResidualPlusNone], config: Config, found: Optional[List[Edit]] = None,
                      shares: Optional[Dict[Tuple[str, int], Tuple[Edit, ...]]] = None,
                      facts: RunFacts = NO_FACTS, session: Optional[LintSession] = None) -> Tuple[str, Dict[Tuple[str, int], Tuple[Tuple[int, int], ...]], Any]:
    """The residual-plus-None rewrite of every derivative `fix_plans` name, as text edits at
    `ast` positions (`residual_text`, the one writer); with, per
    rewritten derivative (name, line), the row ranges of the code it rewrites, and the `ast`
    module of `text`. Each derivative's plan is the one its fix carries (made when the file was
    linted) while `text` is what it was made from and no other fix of the derivative moves more;
    else the file is collected and planned again, as the rule would plan it now. `found`
    receives the edits, when the rewrite knows them; `shares` each derivative's own edits, when
    they were computed apart. `session`: the lint session whose kept parse of `text` is read, if
    any."""
    names = tuple(n.decode() for n in prefilter_names(config, facts))
    # the linter's parse, when it just read this text
    module, focused = (session.recall_parse(text, names) if session is not None else None) or (parse(text), None)
    lines = source_lines(text)
    merged: Dict[Tuple[str, int], Set[int]] = {}
    carried: Dict[Tuple[str, int], List[Tuple[Plan, str]]] = {}  # the plans the fixes carry, and what from
    for fp in fix_plans:
        merged.setdefault((fp.target, fp.line), set()).update(fp.positions)
        if isinstance(fp.planned, Plan) and fp.planned_on:
            carried.setdefault((fp.target, fp.line), []).append((fp.planned, fp.planned_on))
    digest = lines_digest(lines) if carried else ""
    derivatives: Optional[Dict[Tuple[str, int], Any]] = None
    plans, rows = [], {}
    taken = _Spans()
    for (name, line), moved in merged.items():
        wanted = tuple(sorted(moved))
        p = next((c for c, on in carried.get((name, line), ()) if c.moved == wanted and on == digest), None)
        if p is None:  # no plan made from this text for these moves: plan now
            if derivatives is None:
                derivatives = _derivatives(text, lines, module, focused, names, config, facts)
            p = _plan_now(derivatives, name, line, wanted)
            if p is None:
                continue
        if taken.overlaps(p.spans):
            continue  # nested definitions: the next pass takes it
        taken.add(p.spans)
        plans.append(p)
        rows[(name, line)] = tuple((start[0], end[0]) for start, end in p.spans)
    if not plans:
        return text, {}, module
    keys = list(rows)
    new_text = _write_residual(text, lines, module, plans, found, shares, rows)
    if not rows:
        return text, {}, module
    plans = [p for p, key in zip(plans, keys) if key in rows]
    if any(p.marked or p.stale_comments or p.annotations for p in plans):
        marked = _return_annotations(_drop_stale_comments(_mark_kept_nondiff(new_text, plans, config, facts), plans),
                                     plans)
        if marked != new_text:  # the edits known so far miss the marks
            if found is not None:
                found[:] = diff_edits(text, marked)
            if shares is not None:
                shares.clear()  # the caller splits the whole rewrite
            new_text = marked
    return new_text, rows, module


def _derivatives(text: str, lines: List[str], module: Any, focused: Any, names: Tuple[str, ...], config: Config,
                 facts: RunFacts) -> Dict[Tuple[str, int], Any]:
    """(name, line) -> (the model, the derivative): the file collected again, on the regions the
    linter analysed (the plans' facts, callers and jitted uses, are all in them)."""
    recognizer = Recognizer.for_run(config, facts)
    model = collect(focused if focused is not None else focus(module, text, lines, list(names)), lines, recognizer)
    found: Dict[Tuple[str, int], Any] = {}
    for d in model.derivatives:  # find_derivative's answer for each, in one pass
        found.setdefault((d.name, d.anchor.lineno), (model, d))  # type: ignore[attr-defined]
    return found


def _plan_now(derivatives: Mapping[Tuple[str, int], Any], name: str, line: int, moved: Tuple[int, ...]) -> Optional[Plan]:
    """The plan the rule would make now for `moved` of the derivative (`name`, `line`), or None."""
    found = derivatives.get((name, line))
    if found is None:
        return None
    model, d = found
    try:
        return plan(model, d, moved)
    except Refusal:
        return None


def _write_residual(text: str, lines: List[str], module: Any, plans: Sequence[Plan],
                    found: Optional[List[Edit]], shares: Optional[Dict[Tuple[str, int], Tuple[Edit, ...]]],
                    rows: Dict[Tuple[str, int], Any]) -> str:
    """The rewrite written by the one writer, text edits at `ast` positions (`residual_text`).
    A plan it cannot write exactly is dropped from `rows` (its fix is not made)."""
    from vjplint.fixes.residual_text import spans_of

    written = spans_of(text, lines, module, plans)
    starts = line_starts(text)
    every: List[Tuple[int, int, str]] = []
    for key, spans_ in zip(list(rows), written.per_plan):
        if spans_ is None:
            del rows[key]
            continue
        every += spans_
        if not written.apart or not spans_:
            continue
        edits = _region_edits(text, starts, spans_)
        if found is not None:
            found.extend(edits)
        if shares is not None and not written.imports:  # else the caller splits the whole rewrite
            shares[key] = edits
    if not every:
        return text
    if found is not None:
        if written.apart:
            found.extend(e for span in written.imports for e in _region_edits(text, starts, [span]))
        else:  # two derivatives' edits share a line: the edits of the whole rewrite
            found.extend(_region_edits(text, starts, every + written.imports))
    return apply_spans(text, every + written.imports)


def _drop_stale_comments(text: str, plans: Sequence[Any]) -> str:
    """The rewritten `return` lines lose an end-of-line comment the rewrite makes false (fwd's
    `return x, (lo, hi)  # no residual values to save`, bwd's `return (None, g)  # a 1-tuple`):
    the plans' `stale_comments`. A `# noqa: VJP602` the rewrite put after it stays."""
    stale = {c for p in plans for c in p.stale_comments}
    if not stale:
        return text
    lines = lines_with_endings(text)
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        mark = re.search(r"\s+# noqa: VJP\d+$", body)
        kept, body = (mark.group(0).lstrip(), body[:mark.start()]) if mark else ("", body)
        for comment in stale:
            if body.endswith(comment) and "return" in body[:len(body) - len(comment)]:
                code = body[:len(body) - len(comment)].rstrip()
                lines[i] = code + ("  " + kept if kept else "") + line[len(line.rstrip("\r\n")):]
                break
    return "".join(lines)


def _return_annotations(text: str, plans: Sequence[Any]) -> str:
    """fwd's and bwd's `-> Tuple[...]` follow the new residuals and arity (the plans'
    `annotations`): the first `-> old:` after `def <name>(`, on the def's own lines (its
    parameters may span several). Done once on the written text, whichever writer wrote it."""
    for p in plans:
        for name, old, new in p.annotations:
            found = re.search(rf"\bdef\s+{re.escape(name)}\s*\(", text)
            if found is None:
                continue
            hit = re.compile(rf"->\s*{re.escape(old)}\s*:").search(text, found.end())
            if hit is None or re.search(r"\n\s*(def|class)\s", text[found.end():hit.start()]):
                continue
            text = text[:hit.start()] + hit.group(0).replace(old, new, 1) + text[hit.end():]
    return text


def _mark_kept_nondiff(text: str, plans: Sequence[Any], config: Config, facts: RunFacts = NO_FACTS) -> str:
    """`# noqa: VJP602` on the lines where VJP602 reads the rewrite's `None` for a moved argument
    as a forgotten cotangent (the plans' `marked`): the argument was declared never
    differentiated (nondiff_argnums), which is what the `None` keeps, and VJP602 says to mark
    such a `None` so. Found by running VJP602 on the rewritten text, so a mark is never unused
    (VJP901). A line no comment can end (a continuation, inside a string) stays unmarked."""
    from dataclasses import replace

    from vjplint.lint.engine import lint_source

    wanted = {(p.name, param) for p in plans for param in p.marked}
    if not wanted:
        return text
    only = replace(config, select=(KEPT_NONDIFF,), extend_select=(), ignore=(), per_file_ignores=())
    rows = set()
    for diagnostic in lint_source("<residual fix>", text, only, facts=facts).diagnostics:
        found = diagnostic.evidence if diagnostic.code == KEPT_NONDIFF else None
        if isinstance(found, DroppedCotangent) and any((found.function, param) in wanted for param in found.params):
            rows.add(diagnostic.location.row)
    for row in sorted(rows):
        edit = noqa_edit(text, source_lines(text), row, KEPT_NONDIFF)
        if edit is not None:
            text = apply_line_edit(text, edit)
    return text


class _Spans:
    """The (start, end) spans of the plans accepted so far, answering `spans_overlap` against all
    of them by bisection (a scan of every accepted plan was quadratic in dense modules)."""

    def __init__(self) -> None:
        self.starts: List[Any] = []
        self.ends: List[Any] = []
        self.longest_end: List[Any] = []  # the furthest end among spans starting at or before each

    def overlaps(self, spans: Sequence[Tuple[Any, Any]]) -> bool:
        import bisect

        for s1, e1 in spans:
            i = bisect.bisect_left(self.starts, e1)  # spans starting before e1 ...
            if i and self.longest_end[i - 1] > s1:  # ... one of which ends after s1
                return True
        return False

    def add(self, spans: Sequence[Tuple[Any, Any]]) -> None:
        import bisect

        for s, e in spans:
            i = bisect.bisect_right(self.starts, s)
            self.starts.insert(i, s)
            self.ends.insert(i, e)
            self.longest_end[i:] = []
            for j in range(i, len(self.starts)):
                self.longest_end.append(max(self.ends[j], self.longest_end[j - 1]) if j else self.ends[j])


def _region_edits(text: str, starts: List[int], spans_: Sequence[Tuple[int, int, str]]) -> Tuple[Edit, ...]:
    """The edits of one derivative's spans, as `diff_edits` cuts them, from a diff of only the
    lines they touch (a diff of the whole file per rewrite was most of --fix on large files)."""
    import bisect

    first = bisect.bisect_right(starts, min(s for s, _, _ in spans_))
    last = min(bisect.bisect_right(starts, max(e for _, e, _ in spans_)), len(starts) - 1)
    low, high = starts[first - 1], starts[last] if last < len(starts) - 1 else len(text)
    old = text[low:high]
    new = apply_spans(old, [(s - low, e - low, c) for s, e, c in spans_])
    shift = first - 1
    return tuple(Edit(e.content, Position(e.location.row + shift, e.location.column),
                      Position(e.end_location.row + shift, e.end_location.column)) for e in diff_edits(old, new))


class _Layout:
    """A parsed text's lines and top-level statement rows, to check edited pieces of it."""

    def __init__(self, text: str, module: Any) -> None:
        self.lines = lines_with_endings(text)
        self.firsts = [min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) for s in module.body]
        self.lasts = [s.end_lineno or s.lineno for s in module.body]

    def parses_after(self, edits: Sequence[Edit]) -> bool:
        """Whether the text still parses with `edits` applied, parsing only the top-level
        statements beside the edits (a whole-file parse per fix was quadratic): edits whose
        statements are apart are checked apart, as the untouched statements between them parsed
        before and do not change."""
        ranges = sorted(((self._rows(e.location.row - 1, e.end_location.row + 1), e) for e in edits),
                        key=lambda pair: pair[0])
        group: List[Edit] = []
        low = high = 0
        for (first, last), edit in ranges:
            if group and first > high:
                if not self._piece_parses(low, high, group):
                    return False
                group = []
            if not group:
                low, high = first, last
            group.append(edit)
            high = max(high, last)
        return not group or self._piece_parses(low, high, group)

    def _rows(self, low: int, high: int) -> Tuple[int, int]:
        """`low`..`high` widened to whole top-level statements."""
        import bisect

        low = max(1, low)
        i = bisect.bisect_right(self.firsts, low) - 1  # the statement holding `low`, if any
        if i >= 0 and self.lasts[i] >= low:
            low = self.firsts[i]
        j = bisect.bisect_right(self.firsts, high) - 1
        if j >= 0 and self.lasts[j] >= high:
            high = self.lasts[j]
        return low, high

    def _piece_parses(self, low: int, high: int, edits: Sequence[Edit]) -> bool:
        shift = low - 1
        piece = "".join(self.lines[shift:high])
        moved = [Edit(e.content, Position(e.location.row - shift, e.location.column),
                      Position(e.end_location.row - shift, e.end_location.column)) for e in edits]
        return _parses(apply_edits(piece, moved))


def _edits_per_plan(text: str, fix_plans: Sequence[ResidualPlusNone], config: Config, facts: RunFacts = NO_FACTS,
                    session: Optional[LintSession] = None) -> Dict[FixPlan, Tuple[Edit, ...]]:
    """Each plan's own edits, from one rewrite of the whole file (a rewrite per plan was most
    of a JSON report's time): every edit of the combined rewrite belongs to the derivative whose
    rows it touches. Edits in no derivative's rows (the removal of an import that only the whole
    rewrite leaves unused) belong to no single fix and are dropped: applying one share alone must
    not remove what the other derivatives still use. A plan whose share does not parse on its own
    is left out (the caller computes it alone)."""
    apart: Dict[Tuple[str, int], Tuple[Edit, ...]] = {}
    new_text, rows, module = _residual_rewrite(text, fix_plans, config, shares=apart, facts=facts, session=session)
    if not rows:
        return {}
    layout = _Layout(text, module)
    if apart:  # each derivative's edits, computed apart: nothing to split
        if not layout.parses_after([e for edits in apart.values() for e in edits]):
            return {}
        shares: Dict[Tuple[str, int], List[Edit]] = {key: list(edits) for key, edits in apart.items()}
    else:
        every = diff_edits(text, new_text)
        if every and not layout.parses_after(every):
            return {}
        shares = _split_by_owner(every, rows)
        if shares is None:
            return {}  # one edit spans two derivatives' code: no clean split, each is computed alone
    out: Dict[FixPlan, Tuple[Edit, ...]] = {}
    by_key: Dict[Tuple[str, int], List[FixPlan]] = {}
    for fp in fix_plans:
        by_key.setdefault((fp.target, fp.line), []).append(fp)
    for key, edits in shares.items():
        if edits and layout.parses_after(edits):
            for fp in by_key.get(key, ()):
                out[fp] = tuple(edits)
    return out


def _split_by_owner(every: Sequence[Edit], rows: Mapping[Tuple[str, int], Tuple[Tuple[int, int], ...]]
                    ) -> Optional[Dict[Tuple[str, int], List[Edit]]]:
    """The edits of a whole rewrite, each given to the derivative whose rows it touches (None
    when one touches two). Edits in no derivative's rows (the removal of an import only the
    whole rewrite leaves unused) belong to no single fix and are dropped."""
    shares: Dict[Tuple[str, int], List[Edit]] = {key: [] for key in rows}
    owner_of_row: Dict[int, List[Tuple[str, int]]] = {}
    for key in rows:
        for row in sorted({r for a, b in rows[key] for r in range(a, b + 1)}):
            owner_of_row.setdefault(row, []).append(key)
    for edit in every:
        first, last = edit.location.row, edit.end_location.row
        touched = list(dict.fromkeys(key for row in range(first, last + 1) for key in owner_of_row.get(row, ())))
        if len(touched) > 1:
            return None
        if touched:
            shares[touched[0]].append(edit)
    return shares


def offered(d: Diagnostic, unsafe: bool) -> bool:
    """A fix this run may apply: safe ones always, unsafe ones with --unsafe-fixes."""
    fix = d.fix
    if fix is None or not (fix.resolved or fix.plan is not None):
        return False
    return fix.applicability is Applicability.SAFE or unsafe


def _parses(text: str) -> bool:
    try:
        parse(text)
        return True
    except SourceError:
        return False
    except Exception:
        return False


# -- one pass ------------------------------------------------------------------------------------
def apply_fixes_once(text: str, diagnostics: Sequence[Diagnostic], unsafe: bool, config: Config = Config(),
                     errors: Optional[List[str]] = None, facts: RunFacts = NO_FACTS,
                     session: Optional[LintSession] = None) -> Tuple[str, List[Diagnostic]]:
    """One pass: the offered fixes whose edits do not overlap, applied together.
    Returns the new text and the diagnostics it fixed (the rest wait for the next pass)."""
    chosen = [d for d in diagnostics if offered(d, unsafe)]
    groups: List[Tuple[Tuple[Edit, ...], List[Diagnostic]]] = []
    by_kind: Dict[type, List[Diagnostic]] = {}  # one rewrite per kind of plan makes all its plans
    for d in chosen:
        if not d.fix.resolved:  # type: ignore[union-attr]
            by_kind.setdefault(type(d.fix.plan), []).append(d)  # type: ignore[union-attr]
    context = FileContext(config, facts, session)
    for kind, ds in by_kind.items():
        fix_plans = list(dict.fromkeys(d.fix.plan for d in ds))  # type: ignore[union-attr]
        try:
            done = kind.edits(text, fix_plans, context)  # type: ignore[attr-defined]
        except Exception as exc:  # a failing rewrite loses its fixes, never the file
            if errors is not None:
                errors.append(f"the {kind.kind} fix failed: {type(exc).__name__}: {exc}")  # type: ignore[attr-defined]
            continue
        made = set(done.made)
        fixed = [d for d in ds if d.fix.plan in made]  # type: ignore[union-attr]
        if fixed and done.edits:
            groups.append((done.edits, fixed))
    singles = sorted((d for d in chosen if d.fix.resolved), key=Diagnostic.sort_key)  # type: ignore[union-attr]
    groups.extend((d.fix.edits, [d]) for d in singles)  # type: ignore[union-attr]
    starts = line_starts(text)
    accepted: List[Tuple[int, int, str]] = []
    taken = Taken()
    accepted_groups: List[Tuple[List[Tuple[int, int, str]], List[Diagnostic]]] = []
    for edits, ds in groups:
        group = spans(text, starts, edits)
        if any(taken.conflicts(s) for s in group):
            continue
        for s in group:
            taken.add(s)
        accepted.extend(group)
        accepted_groups.append((group, ds))
    if not accepted_groups:
        return text, []
    new = apply_spans(text, accepted)
    if _parses(new):
        return new, [d for _, ds in accepted_groups for d in ds]
    # Some combination does not parse: keep only the groups that parse on their own, one by one.
    current, fixed = text, []
    for group, ds in accepted_groups:
        candidate = apply_spans(text, [*(s for g, _ in fixed for s in g), *group])
        if _parses(candidate):
            current = candidate
            fixed.append((group, ds))
        elif errors is not None:
            errors.append(f"a {ds[0].code} fix would produce code that does not parse; not applied")
    return current, [d for _, ds in fixed for d in ds]


def apply_fixes(source_text: str, diagnostics: Sequence[Diagnostic], unsafe: bool,
                config: Config = Config(), facts: RunFacts = NO_FACTS) -> str:
    """One pass of fixes over a text and its diagnostics (pure; see `fix_source` for the loop)."""
    return apply_fixes_once(source_text, diagnostics, unsafe, config, facts=facts)[0]


# -- to a fixed point ----------------------------------------------------------------------------------
@dataclass
class FixResult:
    text: str
    fixed: List[Diagnostic] = field(default_factory=list)
    remaining: List[Diagnostic] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    converged: bool = True

    @property
    def fixed_count(self) -> int:
        return len(self.fixed)


def fix_text(filename: str, text: str, config: Config = Config(), unsafe: bool = False,
             exclude: Sequence[str] = (), path: Optional[str] = None, facts: RunFacts = NO_FACTS) -> FixResult:
    """Lint, fix, re-lint until nothing more applies (at most MAX_PASSES passes). Every
    intermediate text parses; fixes of derivatives named in `exclude` are skipped. `facts`: what
    the run derives about the file (vjplint.model.run_facts), as for `lint_source`."""
    with _collector_paused():
        # each pass's rewrite reads the parse of the lint just before it
        return _fix_text(filename, text, config, unsafe, exclude, path, facts, LintSession(keep_parses=True))


def _fix_text(filename: str, text: str, config: Config, unsafe: bool, exclude: Sequence[str],
              path: Optional[str], facts: RunFacts = NO_FACTS, session: Optional[LintSession] = None) -> FixResult:
    from vjplint.lint.engine import lint_source

    result = FixResult(text)
    for _ in range(MAX_PASSES):
        lint = lint_source(filename, result.text, config, path=path, facts=facts, session=session)
        result.errors.extend(e for e in lint.errors if e not in result.errors)
        result.remaining = lint.diagnostics
        todo = [d for d in lint.diagnostics if offered(d, unsafe)
                and not (d.fix.plan is not None and d.fix.plan.target in exclude)]  # type: ignore[union-attr]
        if exclude and todo:  # the other fixes: by the target that holds them (vjplint.fixes.targets)
            todo = _not_excluded(result.text, todo, config, exclude, facts)
        if not todo or any(d.code == "VJP900" for d in lint.diagnostics):
            return result
        new, fixed = apply_fixes_once(result.text, todo, unsafe, config, result.errors, facts, session)
        if not fixed or new == result.text:
            return result
        result.text = new
        result.fixed.extend(fixed)
    lint = lint_source(filename, result.text, config, path=path, facts=facts)
    result.remaining = lint.diagnostics
    if any(offered(d, unsafe) for d in lint.diagnostics):
        result.converged = False
        result.errors.append(f"{filename}: fixes did not converge after {MAX_PASSES} passes; "
                             f"the file is left in its last consistent state, please report this")
    return result


def _not_excluded(text: str, todo: List[Diagnostic], config: Config, exclude: Sequence[str],
                  facts: RunFacts = NO_FACTS) -> List[Diagnostic]:
    found = model_of(text, config, facts)
    if found is None:
        return todo
    model, module = found
    return [d for d in todo if d.fix.plan is not None  # type: ignore[union-attr]
            or target_of(model, module, d.location.row) not in exclude]


def fix_source(filename: str, text: str, config: Config = Config(), unsafe: bool = False,
               path: Optional[str] = None, facts: RunFacts = NO_FACTS) -> Tuple[str, int, List[Diagnostic]]:
    """(fixed text, number of diagnostics fixed, diagnostics left) for one file's text."""
    result = fix_text(filename, text, config, unsafe, path=path, facts=facts)
    return result.text, result.fixed_count, result.remaining


# -- edits for JSON / SARIF / LSP -------------------------------------------------------------------------
Settings = Union[Config, Mapping[str, Config]]
# What the run derives about each file (vjplint.model.run_facts), beside its settings: filename -> RunFacts.
FactsOf = Mapping[str, RunFacts]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a fix is computed, as while a file is linted
    (vjplint.batch.parallel): with libcst's trees alive, its scans of the millions of young `ast`
    and libcst objects cost more than the parse itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def attach_fix_edits(diagnostics: Sequence[Diagnostic], sources: Mapping[str, List[str]], settings: Settings,
                     *, once: bool = False, facts: Optional[FactsOf] = None,
                     session: Optional[LintSession] = None) -> None:
    """`session`: the lint session whose kept parse (of the file linted last) the fixes may read."""
    with _collector_paused():
        _attach_fix_edits(diagnostics, sources, settings, once=once, facts=facts or {}, session=session)


def _attach_fix_edits(diagnostics: Sequence[Diagnostic], sources: Mapping[str, List[str]], settings: Settings,
                      *, once: bool = False, facts: FactsOf, session: Optional[LintSession] = None) -> None:
    """Compute the edits of planned fixes (in place), with each file's own settings (`settings`:
    one Config for all, or filename -> Config). A plan whose edits cannot be computed stays
    unresolved (JSON shows `fix: null` for it). Several diagnostics share one plan when one
    rewrite fixes them all (VJP101 on `lo` and on `hi`); with `once` only the first carries the
    edits, so that a consumer applying every fix of a report (JSON, SARIF) applies each rewrite
    once. The editor wants a quick fix on each, and leaves `once` off."""
    cache: Dict[Tuple[str, FixPlan], Tuple[Edit, ...]] = {}
    carried: Set[Tuple[str, FixPlan]] = set()
    wanted: Dict[str, Dict[type, List[FixPlan]]] = {}  # file -> kind of plan -> its plans there
    for d in diagnostics:
        fix = d.fix
        if fix is not None and not fix.resolved and fix.plan is not None and d.filename in sources:
            wanted.setdefault(d.filename, {}).setdefault(type(fix.plan), []).append(fix.plan)
    for filename, kinds in wanted.items():  # one rewrite per file for all the plans of a kind, split
        text = "\n".join(sources[filename]) + "\n"
        config = settings if isinstance(settings, Config) else settings.get(filename, Config())
        context = FileContext(config, facts.get(filename, NO_FACTS), session)
        for kind, fix_plans in kinds.items():
            try:
                alone = kind.edits(text, fix_plans, context, alone=True).alone  # type: ignore[attr-defined]
            except Exception:
                alone = {}
            cache.update({(filename, fp): alone.get(fp, ()) for fp in fix_plans})
    for d in diagnostics:
        fix = d.fix
        if fix is None or fix.resolved or fix.plan is None or (d.filename, fix.plan) not in cache:
            continue
        edits = cache[(d.filename, fix.plan)]
        if edits and not (once and (d.filename, fix.plan) in carried):
            d.fix = fix.with_edits(edits)
            carried.add((d.filename, fix.plan))
