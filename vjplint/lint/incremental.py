"""Incremental lint of one document that keeps changing (the Language Server's buffers).

The text is split into chunks, one per top-level statement (with the comment lines after it).
After an edit only the chunks between the unchanged first and last lines are parsed again.
Chunks are grouped into families: statements linked through a module-level name that one
binds and another mentions (a custom_vjp, its fwd/bwd rules, its defvjp call, its callers) are
one family; imports are context, part of every family. Each family is linted as a module of
its own (its statements and the context, parsed compact and moved to their real rows) and its raw
findings are cached by the family's text; an unchanged family is not linted again, its findings
are moved to the rows where its statements are now. Noqa comments, per-file ignores and the
rule selection apply over the whole file, as `engine.lint_source` does.

A rule sees, for a finding, every statement that can matter to it: the ones sharing a name
with it, transitively. Whenever something cannot be split safely (a syntax error, a skip-file
comment, no name a finding needs) the whole text goes through `engine.lint_source`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.lint.session import LintSession
from vjplint.diagnostics import Diagnostic, Edit, Position
from vjplint.lint.chunks import Chunk, grouped, make_chunk, split, starts_of
from vjplint.lint.engine import (SKIP_FILE, LintResult, RuleSplit, _finish, _grafts, _lint_family, enabled_codes, lint_source,
                                 may_contain_findings, prefilter_names)
from vjplint.model.file_model import LineTable
from vjplint.syntax.positions import lines_with_endings, source_lines
from vjplint.syntax.source import SourceError
_ROW_IN_TEXT = re.compile(r"\blines? \d")


class Superseded(Exception):
    """The caller no longer wants this result (a newer text, a cancelled request)."""


@dataclass
class _Cached:
    starts: Tuple[int, ...]  # the rows the family module's chunks started at when it was linted
    diagnostics: List[Diagnostic]
    errors: List[str]
    rows_in_messages: bool  # a message names a row ("called (line 21)"): valid only where it was linted


@dataclass
class IncrementalLinter:
    """lint(text) == engine.lint_source(filename, text, config, path).diagnostics, reusing the
    findings of families of statements whose text did not change since the previous call."""

    filename: str
    config: Config
    path: Optional[str] = None
    facts: RunFacts = NO_FACTS  # what the run derives about the file (vjplint.model.run_facts)
    session: LintSession = field(default_factory=LintSession)  # the Language Server's, shared by its linters
    chunks: List[Chunk] = field(default_factory=list)
    old_lines: List[str] = field(default_factory=list)
    cache: Dict[tuple, _Cached] = field(default_factory=dict)
    stats: Dict[str, int] = field(default_factory=lambda: {"linted": 0, "reused": 0, "reparsed": 0, "full": 0})
    text: Optional[str] = None  # the text of the last lint split into families
    modules: List[Tuple[int, ...]] = field(default_factory=list)  # chunk indices of each family's module
    grouping: Optional[Tuple[Tuple[Chunk, ...], List[List[Chunk]]]] = None  # statements -> their families
    unprimed: bool = False  # the first text was linted whole (`whole_first`): its families are not cached yet
    whole: Optional[Tuple[str, LintResult]] = None  # that text and its whole lint, until primed

    def lint(self, text: str, should_stop: Optional[Callable[[], bool]] = None,
             whole_first: bool = False, split: Optional[Callable[[], Optional[RuleSplit]]] = None,
             keep: Optional[List[object]] = None) -> LintResult:
        """`whole_first`: with nothing cached yet, lint the text whole, as the command line does
        (once, that is faster than family by family: a document's first diagnostics come
        sooner); `prime` then caches its families' findings from that lint for the edits to
        come, or, where it cannot (`_seed`), lints them (an edit before that is done lints the
        families left: linting whole again at each edit would never let it end). `split()`, asked
        only for that whole lint: the rules another process runs meanwhile (engine.RuleSplit),
        or None. `keep`: as `engine.lint_source`'s (that whole lint's model, freed by the caller). A text of
        the session groups (`LintSession.groups`: dense in custom derivatives) is linted family by
        family at once (as `engine.lint_source` lints it: `engine._lint_grouped`), caching them as
        it goes."""
        stop = should_stop or (lambda: False)
        data = text.encode("utf-8", "surrogatepass")
        if SKIP_FILE.search(text) or not may_contain_findings(data, prefilter_names(self.config, self.facts, self.session)):
            return self._whole(text)
        if whole_first and not self.chunks and not self.cache and not self.session.groups(
                text, [n.decode() for n in prefilter_names(self.config, self.facts, self.session)], _grafts(self.facts)):
            self.unprimed = True
            self.stats["full"] += 1
            result = lint_source(self.filename, text, self.config, path=self.path, facts=self.facts, session=self.session,
                                 split=split() if split is not None else None, keep=keep)
            self.whole = (text, result)
            return result
        lines = lines_with_endings(text)
        try:
            self._update_chunks(lines)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return self._whole(text)
        return self._lint_families(text, stop)

    def prime(self, text: str, should_stop: Optional[Callable[[], bool]] = None) -> None:
        """After a `whole_first` lint of `text`: cache its families' findings from that lint, or
        else lint its families (Superseded when `should_stop()`; the families done stay cached,
        a later call or the next edit's lint goes on from there)."""
        if not self.unprimed:
            return
        whole, self.whole = self.whole, None
        if whole is not None and whole[0] == text and self._seed(text, whole[1]):
            return
        self.lint(text, should_stop)  # the families done stay cached, if it stops

    def _seed(self, text: str, result: LintResult) -> bool:
        """Cache each family's findings from the whole lint of `text`, not linting any again: a
        family's lint finds exactly the whole lint's findings in its own statements (the
        families' union is the whole lint, tests/unit/test_incremental.py; one family's module holds
        no other family's statements). False, nothing cached, where that cannot be read off: a
        finding in an import (every family's module holds the imports) or outside every family,
        or an internal error (which family's lint would repeat it is unknown)."""
        if result.findings is None or result.errors:
            return False
        try:
            self._update_chunks(lines_with_endings(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.chunks, self.old_lines = [], []
            return False
        starts = self._starts()
        families = self._families()
        owner: Dict[int, int] = {k: n for n, family in enumerate(families) for k in family}
        found: List[List[Diagnostic]] = [[] for _ in families]
        for d in result.findings:
            n = owner.get(bisect.bisect_right(starts, d.location.row) - 1)
            if n is None:
                return False
            found[n].append(d)
        context = [i for i, c in enumerate(self.chunks) if c.context]
        for family, diagnostics in zip(families, found):
            order = sorted(context + family)
            base = starts[family[0]] if family else 0
            key = (tuple(self.chunks[i] for i in order), tuple(starts[i] - base for i in family))
            rows = any(_ROW_IN_TEXT.search(d.message) for d in diagnostics)
            self.cache[key] = _Cached(tuple(starts[i] for i in order), diagnostics, [], rows)
        self.text, self.modules, self.unprimed = text, [tuple(sorted(context + f)) for f in families], False
        self.stats["seeded"] = self.stats.get("seeded", 0) + len(families)
        return True

    # -- chunks --------------------------------------------------------------------------------
    def _whole(self, text: str) -> LintResult:
        self.chunks, self.old_lines, self.text, self.modules, self.unprimed = [], [], None, [], False
        self.whole = None
        self.stats["full"] += 1
        return lint_source(self.filename, text, self.config, path=self.path, facts=self.facts, session=self.session)

    def _update_chunks(self, lines: List[str]) -> None:
        old = self.old_lines
        if not self.chunks:
            self.chunks = split(lines, 0, len(lines))
            self.old_lines = lines
            self.stats["reparsed"] += len(lines)
            return
        limit = min(len(old), len(lines))
        prefix = 0
        while prefix < limit and old[prefix] == lines[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[-1 - suffix] == lines[-1 - suffix]:
            suffix += 1
        # Keep the chunks wholly inside the unchanged head and tail; parse what lies between.
        head: List[Chunk] = []
        row = 0
        index = 0
        while index < len(self.chunks) and row + len(self.chunks[index].lines) <= prefix:
            head.append(self.chunks[index])
            row += len(self.chunks[index].lines)
            index += 1
        tail: List[Chunk] = []
        end = len(old)
        back = len(self.chunks) - 1
        while back >= index and end - len(self.chunks[back].lines) >= len(old) - suffix:
            tail.append(self.chunks[back])
            end -= len(self.chunks[back].lines)
            back -= 1
        tail.reverse()
        # A tail chunk starts a top-level statement; if the edited lines between parse on their own
        # they end cleanly there (no open bracket, string, continuation or block), so parsing
        # them alone gives what parsing the whole file would.
        region_end = len(lines) - (len(old) - end)
        middle = split(lines, row, region_end)
        if middle and not middle[0].statements and head:  # comment lines only: they join the chunk above
            merged = head.pop()
            middle[0] = make_chunk(merged.lines + middle[0].lines, merged.statements, merged.context,
                               merged.binds, merged.mentions, merged.registers, merged.odd_registration, merged.defines,
                                   merged.nested)
        self.chunks = head + middle + tail
        self.old_lines = lines
        self.stats["reparsed"] += region_end - row

    # -- families ------------------------------------------------------------------------------
    # -- a family as a document of its own -------------------------------------------------------
    def current(self, text: str) -> bool:
        return self.text is not None and self.text == text

    def family_document(self, row: int) -> Optional[Tuple[List[str], List[Tuple[int, int, int]]]]:
        """The lines of the family of statements at `row` (1-based) and the imports, in order and
        without the rest of the last text, with a last line that still reads the imports the
        other statements read (so that a fix sees them used); and its row map: (first row there,
        first row in the text, number of rows) per chunk. None when `row` is in no family (an
        import, a comment before the first statement)."""
        starts, row_at = [], 1
        for chunk in self.chunks:
            starts.append(row_at)
            row_at += len(chunk.lines)
        k = bisect.bisect_right(starts, row) - 1
        if k < 0 or self.chunks[k].context:
            return None
        module = next((m for m in self.modules if k in m), None)
        if module is None:
            return None
        # Statements without names (a module docstring) stay too: fixes lay out what follows them.
        kept = set(module) | {i for i, c in enumerate(self.chunks) if not c.mentions}
        lines: List[str] = []
        rows: List[Tuple[int, int, int]] = []
        imported: Set[str] = set()
        read_elsewhere: Set[str] = set()
        for i, (chunk, start) in enumerate(zip(self.chunks, starts)):
            if chunk.context:
                imported |= chunk.binds
            if i in kept:
                rows.append((len(lines) + 1, start, len(chunk.lines)))
                lines.extend(line.rstrip("\r\n") for line in chunk.lines)
            else:
                read_elsewhere |= chunk.mentions
        names = sorted(imported & read_elsewhere)
        if names:
            lines.append(f"({', '.join(names)},)")
        return lines, rows

    def _starts(self) -> List[int]:
        """The 1-based row each chunk starts at."""
        return starts_of(self.chunks)

    def _families(self) -> List[List[int]]:
        """The chunks' families (indices), grouped once per set of statements."""
        statements = tuple(c for c in self.chunks if c.statements)
        if self.grouping is None or self.grouping[0] != statements:
            triggers = [n.decode() for n in prefilter_names(self.config, self.facts, self.session)]
            groups = grouped(self.chunks, triggers)
            self.grouping = (statements, [[self.chunks[i] for i in g] for g in groups])
        index = {c: i for i, c in enumerate(self.chunks)}
        return [[index[c] for c in g] for g in self.grouping[1]]

    def _lint_families(self, text: str, stop: Callable[[], bool]) -> LintResult:
        starts = self._starts()
        context = [i for i, c in enumerate(self.chunks) if c.context]
        families = self._families()
        if not families:
            families = [[]]  # the context alone still gets its findings
        lines = LineTable(source_lines(text))  # shared by every family's model: joined once (file_model.LineTable)
        enabled, self.partly = enabled_codes(self.config, self.session)
        found: List[Diagnostic] = []
        seen: Set[tuple] = set()  # context statements are in every family: their findings count once
        errors: List[str] = []
        used_keys = set()
        for family in families:
            order = sorted(context + family)
            base = starts[family[0]] if family else 0
            key = (tuple(self.chunks[i] for i in order), tuple(starts[i] - base for i in family))
            used_keys.add(key)
            now = tuple(starts[i] for i in order)
            cached = self.cache.get(key)
            if cached is not None and cached.rows_in_messages and cached.starts != now:
                cached = None
            if cached is None:
                if stop():  # asked before each family to lint (a cached one costs next to nothing)
                    raise Superseded()
                cached = self.cache[key] = self._lint_module(order, now, lines, enabled)
                self.stats["linted"] += 1
            else:
                self.stats["reused"] += 1
                if cached.starts != now:  # moved: keep it where it is now
                    cached = self.cache[key] = _Cached(now, [_relocate(d, cached.starts, now)
                                                             for d in cached.diagnostics],
                                                       cached.errors, cached.rows_in_messages)
            errors.extend(cached.errors)
            keys = []
            for d in cached.diagnostics:
                seen_as = (d.code, d.location, d.end_location, d.message)
                if seen_as not in seen:
                    found.append(d)
                    keys.append(seen_as)
            seen.update(keys)
        for key in [k for k in self.cache if k not in used_keys]:  # only what the current text can reuse
            del self.cache[key]
        self.text, self.modules, self.unprimed = text, [tuple(sorted(context + f)) for f in families], False
        result = LintResult(diagnostics=found, errors=list(dict.fromkeys(errors)), analysed=True, findings=list(found))
        where = self.config.relative_path(self.path if self.path is not None else self.filename)
        return _finish(result, self.config, self.filename, where, lines, enabled)

    def _lint_module(self, order: Sequence[int], starts: Sequence[int], lines: List[str],
                     enabled: Set[str]) -> _Cached:
        """Lint the chunks `order` (context and one family) at their real rows `starts`, as a
        module of their own (engine._lint_family: parsed compact, then moved to those rows)."""
        errors: List[str] = []
        try:
            diagnostics = _lint_family(self.filename, [self.chunks[i] for i in order], starts,
                                       [len(self.chunks[i].lines) for i in order], lines, self.config, enabled,
                                       self.partly, errors, self.facts, self.session)
        except (SourceError, RecursionError) as exc:  # cannot happen for text that parsed in chunks
            raise ValueError(str(exc)) from exc
        rows = any(_ROW_IN_TEXT.search(d.message) for d in diagnostics)
        return _Cached(tuple(starts), diagnostics, errors, rows)


def _relocate(d: Diagnostic, old: Sequence[int], new: Sequence[int]) -> Diagnostic:
    """A copy of `d` with its rows moved along with the chunk each row lies in."""

    def row(r: int) -> int:
        k = max(bisect.bisect_right(old, r) - 1, 0)
        return r - old[k] + new[k]

    def pos(p: Position) -> Position:
        return Position(row(p.row), p.column)

    fix = d.fix
    if fix is not None:
        edits = tuple(Edit(e.content, pos(e.location), pos(e.end_location)) for e in fix.edits)
        plan = replace(fix.plan, line=row(fix.plan.line)) if fix.plan is not None else None
        fix = replace(fix, edits=edits, plan=plan)
    moved = object.__new__(Diagnostic)  # a field-by-field copy: dataclasses.replace costs 5x more
    moved.__dict__.update(d.__dict__)
    moved.location, moved.end_location, moved.fix = pos(d.location), pos(d.end_location), fix
    moved.noqa_row = row(d.noqa_row) if d.noqa_row is not None else None
    return moved
