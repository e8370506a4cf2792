"""Spreading files over processes (and, later, the result cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional, Sequence

from vjplint.config import Config


def lint_many(files: Sequence[Path], config: Config, *, jobs: Optional[int] = None, use_cache: bool = True,
              progress: Optional[Callable[[int, int], None]] = None) -> List["FileOutcome"]:  # noqa: F821
    from vjplint.runner import lint_file

    outcomes = []
    for i, path in enumerate(files):
        outcomes.append(lint_file(path, config))
        if progress is not None:
            progress(i + 1, len(files))
    return outcomes
