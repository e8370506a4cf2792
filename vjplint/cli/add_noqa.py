"""`vjplint --add-noqa PATH...`: a baseline. Every current finding gets `# noqa: CODE` on its
line (merged into a `# noqa` already there), so a large code base starts clean and only new
findings fail CI; a second run adds nothing. Writes are atomic and keep encoding, BOM, line
endings and mode (vjplint.cli.fix)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, List, Sequence

from vjplint.syntax import notebook
from vjplint.cli.fix import encode, write_atomic
from vjplint.cli.report import report_problems
from vjplint.diagnostics import Diagnostic
from vjplint.fixes.noqa import add_noqa
from vjplint.syntax.source import SourceError, decode
from vjplint.batch.runner import lint_paths
from vjplint.lint.engine import lint_source

if TYPE_CHECKING:
    from vjplint.project.workspace import Workspace


def run_add_noqa(args, workspace: "Workspace", paths: Sequence[str], progress=None) -> int:
    """Exit 0 when every finding is now suppressed, 1 when some cannot be (each is named on
    stderr; 0 with --exit-zero), 2 when a file could not be read or written or the run failed."""
    run = lint_paths(paths, workspace, jobs=args.jobs, use_cache=not args.no_cache, progress=progress,
                     force_exclude=args.force_exclude)
    errors = list(run.internal_errors)
    added = 0
    left: List[Diagnostic] = []
    for outcome in run.files:
        diagnostics = outcome.result.diagnostics
        if not diagnostics:
            continue
        try:
            data = outcome.path.read_bytes()
            cells = notebook.read(data) if notebook.is_notebook(outcome.display) else None  # its cells' Python
            decoded = decode(cells.text.encode("utf-8") if cells is not None else data)
        except (OSError, SourceError, notebook.NotebookError) as exc:
            errors.append(f"{outcome.display}: cannot read file: {exc}")
            continue
        # Lint the bytes read now (only files with findings): a cached result or a file edited
        # since must not put a comment on the wrong line.
        diagnostics = lint_source(outcome.display, decoded.text if cells is not None else data, outcome.config,
                                  path=str(outcome.path), facts=outcome.facts).diagnostics
        result = add_noqa(decoded.text, diagnostics)
        left.extend(result.unsuppressible)
        if result.text == decoded.text:
            continue
        try:
            write_atomic(outcome.path, encode(result.text, decoded) if cells is None
                         else notebook.write(data, notebook.cells_of(result.text, cells)))
        except (OSError, UnicodeEncodeError, notebook.NotebookError) as exc:
            errors.append(f"{outcome.display}: cannot write the file: {getattr(exc, 'strerror', None) or exc}")
            continue
        added += result.added
    report_problems(run.problems, errors)
    for d in sorted(left, key=Diagnostic.sort_key):
        print(f"vjplint: warning: {d.filename}:{d.location.row}:{d.location.column}: {d.code} cannot be "
              f"suppressed with `# noqa` {_why(d)}", file=sys.stderr)
    failed = bool(errors) or any(p.fatal for p in run.problems)
    if not run.files and not failed:
        print(f"vjplint: warning: No Python files found under {', '.join(paths)}", file=sys.stderr)
    if not args.quiet:
        print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    return 2 if failed else 1 if left and not args.exit_zero else 0


def _why(d: Diagnostic) -> str:
    if d.noqa_row is None:
        return "(fix it, or exclude the file)"
    return f"on line {d.noqa_row}: a comment there would be part of a string or a continued line"
