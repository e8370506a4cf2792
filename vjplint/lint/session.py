"""What one run keeps between the files it lints: the run's own switches and the parse a fix
that follows a lint reads again. No module-level state: the command line makes a session per
run, the Language Server one for its life, `lint_source` a fresh one when none is given.

- `focus`: analyse only the top-level statements that can matter (vjplint.syntax.regions);
  tests turn it off to compare with the whole module.
- `grouped_min_chars`: a module of this many characters or more is linted a family of
  statements at a time (vjplint.lint.engine._lint_grouped), its trees dropped as it goes:
  GROUPED_MIN_CHARS, or the environment's VJPLINT_GROUPED_MIN_CHARS (tests set 0 to compare the
  grouped lint with the whole one on every file).
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
import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Hashable, Optional, Tuple

from vjplint.syntax.source import parse, same_statements

# (text, prefilter names, the whole module or None, the regions or None)
_Kept = Tuple[str, Tuple[str, ...], Optional[ast.Module], Optional[ast.Module]]


# 2 MB: the whole lint of a dense custom_vjp module of that size peaks near 400 MB (its tree ~150 MB);
# under it a module is linted whole, as before.
GROUPED_MIN_CHARS = 2_000_000
GROUPED_VARIABLE = "VJPLINT_GROUPED_MIN_CHARS"
# A line holding only a comment (found by its newline: a literal start, searched for)
_COMMENT_LINE = re.compile(r"\n[ \t]*#[^\n]*")


def grouped_min_chars() -> int:
    """GROUPED_MIN_CHARS, or the environment's VJPLINT_GROUPED_MIN_CHARS when it is a number."""
    value = os.environ.get(GROUPED_VARIABLE, "").strip()
    try:
        return max(0, int(value)) if value else GROUPED_MIN_CHARS
    except ValueError:
        return GROUPED_MIN_CHARS


@dataclass
class LintSession:
    """A run's switches and memos (see the module's doc)."""

    focus: bool = True
    keep_parses: bool = False
    grouped_min_chars: int = field(default_factory=grouped_min_chars)
    _kept: Optional[_Kept] = field(default=None, repr=False, compare=False)
    # (the configured aliases, the inferred ones) -> the prefilter names
    prefilters: Dict[Hashable, Tuple[bytes, ...]] = field(default_factory=dict, repr=False, compare=False)
    # (select, extend-select, ignore, target) -> (the codes that run, those that run only for their default reports)
    selections: Dict[Hashable, Tuple[FrozenSet[str], FrozenSet[str]]] = field(default_factory=dict, repr=False,
                                                                             compare=False)

    def groups(self, text: str) -> bool:
        """Whether `text` is linted a family of statements at a time: `grouped_min_chars` or more
        of it outside its comment lines. The limit bounds the trees of its code; a notebook's
        export whose images are comment lines of base64 (JAX's `shard_map.py`: 2.4 MB, 0.2 MB of
        code) is linted whole, which reads its few regions only (half the CPU)."""
        limit = self.grouped_min_chars
        if len(text) < limit:
            return False
        if limit == 0:
            return True
        comments = sum(map(len, _COMMENT_LINE.findall(text)))
        return len(text) - comments >= limit

    def for_worker(self) -> "LintSession":
        """The session a worker process lints with: the same switches, an empty slot, empty memos."""
        return LintSession(self.focus, grouped_min_chars=self.grouped_min_chars)

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
