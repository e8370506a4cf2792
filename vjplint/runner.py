"""Lint many files: discovery, reading, the per-file engine, and stable ordering."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from vjplint.config import Config
from vjplint.diagnostics import Diagnostic
from vjplint.discover import Problem, discover
from vjplint.engine import LintResult, lint_source


@dataclass
class FileOutcome:
    path: Path
    display: str
    result: LintResult


@dataclass
class RunResult:
    files: List[FileOutcome] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    visited: List[str] = field(default_factory=list)  # directories and .gitignore files read (discover)

    @property
    def diagnostics(self) -> List[Diagnostic]:
        return [d for f in self.files for d in f.result.diagnostics]

    @property
    def internal_errors(self) -> List[str]:
        return [e for f in self.files for e in f.result.errors]


def display_path(path: Path) -> str:
    if not path.is_absolute() and not path.drive and ".." not in path.parts:
        return str(path)  # what relpath returns for these, without its two abspath calls
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def lint_file(path: Path, config: Config) -> FileOutcome:
    display = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        result = LintResult(errors=[f"{display}: cannot read file: {exc.strerror or exc}"])
        return FileOutcome(path, display, result)
    try:
        result = lint_source(display, data, config)
    except Exception as exc:  # the engine never raises by design; this is the last guard
        result = LintResult(errors=[f"{display}: internal error: {type(exc).__name__}: {exc}"])
    return FileOutcome(path, display, result)


def lint_paths(paths: Sequence[str], config: Config, *, jobs: Optional[int] = None, use_cache: bool = True,
               progress: Optional[Callable[[int, int], None]] = None, force_exclude: bool = False) -> RunResult:
    run = RunResult()
    files = list(discover(paths, config, run.problems, force_exclude=force_exclude, visited=run.visited))
    from vjplint.parallel import lint_many

    run.files = lint_many(files, config, jobs=jobs, use_cache=use_cache, progress=progress)
    run.files.sort(key=lambda f: f.display)
    return run
