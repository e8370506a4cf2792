"""Lint many files: the workspace's files and settings, linted (vjplint.batch.parallel), in a
stable order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Optional, Sequence

from vjplint.batch.outcomes import RunResult

from vjplint.batch.parallel import lint_many
from vjplint.project.index import Read, with_wrappers

if TYPE_CHECKING:
    from vjplint.lint.session import LintSession
    from vjplint.project.workspace import Workspace


def lint_paths(paths: Sequence[str], workspace: "Workspace", *, jobs: Optional[int] = None, use_cache: bool = True,
               progress: Optional[Callable[[int, int], None]] = None, force_exclude: bool = False,
               session: Optional["LintSession"] = None) -> RunResult:
    """Discover the files under `paths` with the workspace's settings and lint them all, in the
    run's lint `session` (vjplint.lint.session; a fresh one if None)."""
    run = RunResult()
    files = workspace.files(paths, run.problems, force_exclude=force_exclude, visited=run.visited)

    anchor = workspace.anchor(paths)
    reads: Dict[str, Read] = {}  # what the index read of each file: the lint reads again only the candidates
    files = with_wrappers(files, anchor, use_cache=use_cache, reads=reads)  # wrappers found in the run's modules, as aliases
    run.files = lint_many(files, anchor, jobs=jobs, use_cache=use_cache, progress=progress, session=session,
                          reads=reads)
    run.files.sort(key=lambda f: f.display)
    run.visited.extend(workspace.consulted)
    return run
