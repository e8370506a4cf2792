"""flake8 plugin (`flake8 --select VJP`), for projects that still run flake8.

Registered as the `VJP` entry point of `flake8.extension` (pyproject.toml). flake8 gives each file's
lines; vjplint's own engine lints them with the file's [tool.vjplint] settings (the nearest
pyproject.toml, as on the command line). `# noqa` is flake8's business: vjplint's own reading of
noqa comments is turned off here (the comments are blanked for the engine, positions unchanged), so
flake8's rules (`--disable-noqa`, a bare `# noqa`, `--extend-ignore`) apply to VJP codes exactly as
to the others, and VJP901 (vjplint's check of its noqa comments) never fires under flake8.

Project-local wrappers of `jax.custom_vjp`/`custom_jvp` (vjplint.project.index) are found as `vjplint
check .` finds them: flake8 hands a plugin one file at a time, so each flake8 process indexes the
Python files under its working directory once (the per-file index cache makes later runs cheap).
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Tuple

from vjplint import __version__
from vjplint.errors import ConfigError
from vjplint.lint.engine import lint_source
from vjplint.model.run_facts import NO_FACTS
from vjplint.project.index import ProjectIndex, build_index
from vjplint.project.workspace import Workspace

if TYPE_CHECKING:
    from vjplint.project.index import ProjectIndex
    from vjplint.project.workspace import Workspace

_NOQA_WORD = re.compile(r"noqa", re.IGNORECASE)
_workspace: Optional["Workspace"] = None  # one per flake8 process: configurations are read once
_index: Optional["ProjectIndex"] = None  # the wrappers under the working directory, indexed once
MAX_INDEXED_FILES = 50_000  # a home directory: no project to index


def _settings(filename: str):
    """(the file's settings, what the project index derives about it: vjplint.model.run_facts)."""
    global _workspace

    if _workspace is None:
        _workspace = Workspace()
    if filename in ("stdin", "-"):
        return _workspace.settings_for(os.getcwd()), NO_FACTS
    path = os.path.abspath(filename)
    config = _workspace.settings_for(path)
    return config, _project_index(_workspace).facts_for(config, Path(path))


def _project_index(workspace: "Workspace") -> "ProjectIndex":
    global _index
    if _index is None:
        try:
            files = [path for path, _ in workspace.files(["."], [])]
            anchor = workspace.anchor(["."])
        except (ConfigError, OSError):
            files = []
        _index = build_index(files, anchor) if 0 < len(files) <= MAX_INDEXED_FILES else ProjectIndex()
    return _index


def without_noqa(source: str) -> str:
    """`source` with the word noqa in its comments replaced by a word of the same length, so that
    the engine sees no noqa comment and every position stays where it was."""
    if "noqa" not in source.lower():
        return source
    lines = source.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source  # the engine reports what does not parse (VJP900)
    for token in tokens:
        if token.type == tokenize.COMMENT and "noqa" in token.string.lower():
            row, col = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + _NOQA_WORD.sub("n0qa", token.string) + line[col + len(token.string):]
    return "".join(lines)


class Plugin:
    """A flake8 tree plugin: flake8 reads the parameters' names (`tree`, `filename`, `lines`)."""

    name = "vjplint"
    version = __version__

    def __init__(self, tree: Any, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        source = without_noqa("".join(self.lines))
        config, facts = _settings(self.filename)
        path = None if self.filename in ("stdin", "-") else self.filename
        result = lint_source(self.filename, source, config, path=path, facts=facts)
        for d in result.diagnostics:
            yield d.location.row, d.location.column - 1, f"{d.code} {d.message}", type(self)
