"""File discovery: walk the given paths, honour excludes and .gitignore, skip symlink loops."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from vjplint.config import Config

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class Problem:
    """A path that could not be walked: reported on stderr, the run goes on."""

    path: str
    message: str


def _excluded(path: Path, root: Path, patterns: Sequence[str]) -> bool:
    name = path.name
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    for pattern in patterns:
        if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(
            relative, pattern.rstrip("/") + "/*"
        ):
            return True
    return False


class _GitIgnores:
    """`.gitignore` files from the repository root down, compiled with pathspec."""

    def __init__(self) -> None:
        self._specs: Dict[Path, Optional[object]] = {}

    def _spec(self, directory: Path) -> Optional[object]:
        if directory not in self._specs:
            spec = None
            ignore = directory / ".gitignore"
            if ignore.is_file():
                try:
                    import pathspec

                    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
                except (OSError, ImportError):
                    spec = None
            self._specs[directory] = spec
        return self._specs[directory]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for directory in [path.parent, *path.parent.parents]:
            spec = self._spec(directory)
            if spec is not None:
                relative = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
                if spec.match_file(relative):  # type: ignore[attr-defined]
                    return True
            if (directory / ".git").exists():
                break
        return False


def discover(paths: Sequence[str], config: Config, problems: List[Problem], *,
             force_exclude: bool = False) -> Iterator[Path]:
    """Python files under `paths`. Explicit files are linted even when excluded (ruff's
    convention) unless `force_exclude`, which pre-commit needs since it names every file."""
    root = Path(config.root) if config.root else Path.cwd()
    patterns = tuple(config.exclude) + tuple(config.extend_exclude)
    gitignores = _GitIgnores() if config.respect_gitignore else None
    seen: set = set()
    for raw in paths:
        path = Path(raw)
        if not os.path.lexists(path):
            problems.append(Problem(raw, "no such file or directory"))
            continue
        if path.is_file() or (path.exists() and not path.is_dir()):
            if force_exclude and (_excluded(path.resolve(), root.resolve(), patterns) or any(
                    _excluded(parent, root.resolve(), patterns) for parent in path.resolve().parents)):
                continue
            yield path
            continue
        if not path.is_dir():
            problems.append(Problem(raw, "is a broken symbolic link"))
            continue
        yield from _walk(path, root, patterns, gitignores, problems, seen)


def _walk(top: Path, root: Path, patterns: Tuple[str, ...], gitignores: Optional[_GitIgnores],
          problems: List[Problem], seen: set) -> Iterator[Path]:
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            real = directory.resolve()
        except (OSError, RuntimeError):
            problems.append(Problem(str(directory), "cannot resolve (symlink loop?)"))
            continue
        if real in seen:
            continue  # a symlink loop or a directory reached twice
        seen.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(directory), f"cannot read directory: {exc.strerror or exc}"))
            continue
        subdirs = []
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError:
                continue
            if _excluded(path, root, patterns):
                continue
            if gitignores is not None and gitignores.ignored(path, is_dir):
                continue
            if is_dir:
                subdirs.append(path)
            elif is_file and entry.name.endswith(PYTHON_SUFFIXES):
                yield path
            elif not is_file and not is_dir and entry.is_symlink() and entry.name.endswith(PYTHON_SUFFIXES):
                problems.append(Problem(str(path), "is a broken symbolic link"))
        stack.extend(reversed(subdirs))
