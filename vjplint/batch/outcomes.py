"""What a batch run produces: one outcome per file, and the run's result."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import Diagnostic
from vjplint.project.discover import Problem, display_path  # noqa: F401 - its users import it from here too
from vjplint.lint.engine import LintResult
from vjplint.syntax.notebook import python_bytes
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import SourceError, decode


@dataclass
class FileOutcome:
    """One file of a run: its settings and its result."""

    path: Path
    display: str
    result: LintResult
    config: Config = Config()  # the settings the file was linted with
    facts: RunFacts = NO_FACTS  # what the run derived about it (vjplint.model.run_facts)


@dataclass
class RunResult:
    """The files of a run, with the problems met finding them."""

    files: List[FileOutcome] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    visited: List[str] = field(default_factory=list)  # directories and .gitignore files read (discover)

    @property
    def diagnostics(self) -> List[Diagnostic]:
        return [d for f in self.files for d in f.result.diagnostics]

    @property
    def internal_errors(self) -> List[str]:
        return [e for f in self.files for e in f.result.errors]


class LazySources(Mapping):
    """display -> source lines of the files with diagnostics, split when a formatter asks, one file
    kept at a time (formatters read them file by file, in diagnostic order). Splitting them all
    up front cost about 200 bytes per line of every such file: 300 MB on a tree with 8,000 findings."""

    def __init__(self, files: Sequence[FileOutcome]) -> None:
        self._files = {f.display: f for f in files if f.result.diagnostics}
        self._last: Tuple[Optional[str], List[str]] = (None, [])

    def __getitem__(self, display: str) -> List[str]:
        if self._last[0] != display:
            outcome = self._files[display]
            decoded = outcome.result.decoded
            if decoded is None:  # a cache hit, or beyond lint_many's budget: read it now

                try:  # a notebook's Python text, as linted (vjplint.syntax.notebook)
                    decoded = decode(python_bytes(display, outcome.path.read_bytes()))
                except (OSError, SourceError, ValueError):
                    decoded = None
            self._last = (display, source_lines(decoded.text) if decoded is not None else [])
        return self._last[1]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)
