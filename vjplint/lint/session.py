"""What one run keeps between the files it lints: the run's own switches and the parse a fix
that follows a lint reads again. No module-level state: the command line makes a session per
run, the Language Server one for its life, `lint_source` a fresh one when none is given.

- `focus`: analyse only the top-level statements that can matter (vjplint.syntax.regions);
  tests turn it off to compare with the whole module.
- `groups(text, names)`: whether a module is linted a family of statements at a time
  (vjplint.lint.engine._lint_grouped), its trees dropped as it goes: by measure
  (`worth_grouping`: a module dense in custom derivatives), or, when `grouped_min_chars` is a
  number (the environment's VJPLINT_GROUPED_MIN_CHARS), every module of that many characters or
  more (tests set 0 to compare the grouped lint with the whole one on every file).
- the parse slot: the parse of the last file linted with a planned fix, for the fix that usually
  follows in the same process (JSON/SARIF/LSP edits, a --fix pass): parsing again was half of
  that fix's cost. One slot, replaced by the next file linted, taken by the fix that reads it;
  kept only where the session says so (`keep_parses`): a tree kept alive past its lint is scanned
  by the cyclic collector again and again, which cost a text report more than the parse it
  would save.
- the run's memos, keyed by value: the prefilter names of each set of aliases, the codes each
  selection enables (`vjplint.lint.engine.prefilter_names`, `enabled_codes`): asked once per file
  by the engine, the fix loop and the workers. A worker's session starts with empty memos.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Hashable, Optional, Sequence, Tuple

from vjplint.syntax.source import parse, same_statements
from vjplint.syntax.text_spans import TextIndex

# (text, prefilter names, the whole module or None, the regions or None)
_Kept = Tuple[str, Tuple[str, ...], Optional[ast.Module], Optional[ast.Module]]


# Which modules are linted a family at a time, by measure (docs/performance.md, "The 10 MB module
# in every shape"): the whole lint's cost grows faster than the number of custom derivatives in a
# module (its rules compare them with each other: a dense module of 0.5 MB took 18 s whole), while
# the grouped lint pays a parse of every statement to find the families (about 0.5 s a MB more on
# a module whose regions are small) and lints them in batches (vjplint.lint.engine._batches).
# Measured crossovers (CPU, one process, batches of 8,000 characters): dense custom_vjp code at
# 0.03 MB, 188 occurrences of the prefilter names: whole 0.55 s, grouped 0.52 s; at 0.1 MB, 620
# occurrences: 1.43 s against 0.95 s; about 2 MB with one block in 30, 384 occurrences: 1.21 s
# against 2.53 s; one block in ten, 1,128 occurrences: 4.12 s against 2.73 s; the 10 MB modules of
# one custom_vjp or of 600k assignments (a handful of occurrences): 2-3 times faster whole, and
# under 500 MB whole; JAX's tests/custom_api_test.py (0.14 MB, 406 occurrences, real code whose
# derivatives sit in big test classes): 1.03-1.17 s whole, 1.14-1.27 s grouped (the CLI, 3 runs
# each). So a module is grouped when its text holds at least GROUPED_NAMES + GROUPED_NAMES_PER_MB
# a million characters occurrences of the names; under GROUPED_FLOOR characters it never is.
GROUPED_FLOOR = 100_000
GROUPED_NAMES = 500
GROUPED_NAMES_PER_MB = 250
# Kept for the environment: VJPLINT_GROUPED_MIN_CHARS=N groups every module of N characters or
# more and no other (tests set 0 to compare the grouped lint with the whole one on every file, and
# a large number to lint every file whole).
GROUPED_MIN_CHARS = 2_000_000
GROUPED_VARIABLE = "VJPLINT_GROUPED_MIN_CHARS"


def grouped_min_chars() -> Optional[int]:
    """The environment's VJPLINT_GROUPED_MIN_CHARS when it is a number; None otherwise (the
    choice is then by measure: `worth_grouping`)."""
    value = os.environ.get(GROUPED_VARIABLE, "").strip()
    try:
        return max(0, int(value)) if value else None
    except ValueError:
        return None


def worth_grouping(text: str, names: Sequence[str], index: Optional[TextIndex] = None) -> bool:
    """Whether `text` is linted faster a family at a time than whole: at least GROUPED_FLOOR
    characters, and its occurrences of `names` (the prefilter names; a literal count, a few ms
    for 10 MB) at least GROUPED_NAMES plus GROUPED_NAMES_PER_MB per million characters.
    `index`: the lint's searches of this text, whose occurrences of the names the regions read
    next (counted from there instead of searching the text again: a name that cannot overlap
    itself occurs there as often as `str.count` says)."""
    if len(text) < GROUPED_FLOOR:
        return False
    needed = GROUPED_NAMES + GROUPED_NAMES_PER_MB * len(text) // 1_000_000
    found_at = TextIndex.of(text, index).occurrences(names) if index is not None else None
    found = 0
    for name in names:
        found += len(found_at[name]) if found_at is not None and not _overlaps(name) else text.count(name)
        if found >= needed:
            return True
    return False


def _overlaps(name: str) -> bool:
    """Whether two occurrences of `name` can overlap (a prefix of it is also its suffix: `aba`)."""
    return not name or any(name[:k] == name[-k:] for k in range(1, len(name)))


@dataclass
class LintSession:
    """A run's switches and memos (see the module's doc)."""

    focus: bool = True
    keep_parses: bool = False
    grouped_min_chars: Optional[int] = field(default_factory=grouped_min_chars)  # None: by measure
    _kept: Optional[_Kept] = field(default=None, repr=False, compare=False)
    # (the configured aliases, the inferred ones) -> the prefilter names
    prefilters: Dict[Hashable, Tuple[bytes, ...]] = field(default_factory=dict, repr=False, compare=False)
    # (select, extend-select, ignore, target) -> (the codes that run, those that run only for their default reports)
    selections: Dict[Hashable, Tuple[FrozenSet[str], FrozenSet[str]]] = field(default_factory=dict, repr=False,
                                                                             compare=False)

    def for_worker(self) -> "LintSession":
        """The session a worker process lints with: the same switches, an empty slot, empty memos."""
        return LintSession(self.focus, grouped_min_chars=self.grouped_min_chars)

    def groups(self, text: str, names: Sequence[str], grafted: bool = False,
               index: Optional[TextIndex] = None) -> bool:
        """Whether `text` (whose prefilter names are `names`) is linted a family of statements
        at a time: by `grouped_min_chars` when the environment gave one, else `worth_grouping`,
        never for a module whose rules another module of the run defines (`grafted`: its whole
        lint parses it whole, not its regions, vjplint.lint.engine._grafts)."""
        if self.grouped_min_chars is not None:
            return len(text) >= self.grouped_min_chars
        return not grafted and worth_grouping(text, names, index)

    def remember_parse(self, text: str, names: Tuple[str, ...], module: Optional[ast.Module],
                       focused: Optional[ast.Module]) -> None:
        """Keep `text`'s module (None when only its regions were parsed) and its regions for the
        prefilter `names` (when known) in the slot, when this session keeps parses."""
        if self.keep_parses:
            self._kept = (text, names, module, focused)

    def forget_parse(self) -> None:
        self._kept = None

    def recall_parse(self, text: str, names: Tuple[str, ...]) -> Optional[Tuple[ast.Module, Optional[ast.Module]]]:
        """The module of exactly `text` and its regions (None where unknown, or when only the
        regions were parsed: the whole module is parsed now), emptying the slot; None when the
        slot holds another text."""
        kept = self._kept
        if kept is None or kept[0] != text:
            return None
        self._kept = None
        _, kept_names, module, focused = kept
        if module is None:  # only the regions were parsed: the fix reads the whole module, and the
            module = parse(text)  # regions must be its own nodes (the plans' are looked up in it)
            return module, same_statements(module, focused) if focused is not None and kept_names == names else None
        return module, focused if kept_names == names else None
