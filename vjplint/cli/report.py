"""Printing a run's outcome: formatted diagnostics on stdout, problems on stderr, the exit code."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Union

from vjplint.errors import UsageError
from vjplint.settings.options import colour_wanted
from vjplint.settings.config import Config
from vjplint.diagnostics import Diagnostic
from vjplint.links import docs_url
from vjplint.lint.session import LintSession
from vjplint.output import OutputContext, get_formatter

if TYPE_CHECKING:
    from vjplint.lint.session import LintSession
    from vjplint.model.run_facts import RunFacts

ArgsLike = object  # an argparse.Namespace of `vjplint check` (vjplint.cli.check)
EDIT_FORMATS = ("json", "sarif", "lsp", "rdjson")  # the formats that carry fix edits


def session_for(output_format: str) -> "LintSession":
    """The run's lint session (vjplint.lint.session). A report that carries fix edits computes
    them right after linting: the linter's parse of a file with a planned fix is kept for them."""
    return LintSession(keep_parses=output_format in EDIT_FORMATS)


def emit(diagnostics: Sequence[Diagnostic], args, output_format: str, sources: Mapping,
         settings: Union[Config, Mapping[str, Config]], fixed_count: int = 0, *, checked: bool = True,
         failed: bool = False, facts: Optional[Mapping[str, "RunFacts"]] = None,
         session: Optional["LintSession"] = None, hidden_fixes: int = 0) -> Optional[str]:
    """Write the formatted diagnostics to stdout and return the text. `settings` (one Config, or
    filename -> Config) gives each file's settings to the fixes whose edits are computed here;
    `facts`, filename -> what the run derived about it (vjplint.model.run_facts); `session`: the
    run's lint session, whose kept parse the fixes may read. `--output-file` takes the text
    instead of stdout; coloured text (`--color`, vjplint.settings.options.colour_wanted) is
    returned as None, as it is not the plain answer a replay may repeat."""
    diagnostics = list(diagnostics)
    if output_format in EDIT_FORMATS:
        from vjplint.fixes.apply import attach_fix_edits

        attach_fix_edits(diagnostics, sources, settings, once=True, facts=facts, session=session)
    docs_url = _docs_url(settings)
    output_file = getattr(args, "output_file", None)
    colour = output_format in ("text", "concise") and not output_file and \
        colour_wanted(getattr(args, "color", None), os.environ, _isatty(sys.stdout))
    ctx = OutputContext(show_fixes=args.show_fixes, unsafe_fixes=args.unsafe_fixes, statistics=args.statistics,
                        quiet=args.quiet, fixed_count=fixed_count, sources=sources, docs_url=docs_url,
                        checked=checked, failed=failed, color=colour, hidden_fixes=hidden_fixes)
    text = get_formatter(output_format)(diagnostics, ctx)
    if output_file:
        write_output_file(output_file, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return None if colour else text  # None: not the plain text a replay may print


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def write_output_file(name: str, text: str) -> None:
    """`--output-file`: the report written to FILE (its directory made, as ruff does), not stdout."""
    directory = os.path.dirname(os.path.abspath(name))
    try:
        os.makedirs(directory, exist_ok=True)
        with open(name, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"--output-file {name}: cannot write: {exc.strerror or exc}") from None


def _docs_url(settings: Union[Config, Mapping[str, Config]]) -> str:
    """The rule links' base (vjplint.links.docs_url): $VJPLINT_DOCS_URL, else the configured
    `docs-url` (the first file's, when files have different settings), else the shipped pages."""
    configs = [settings] if isinstance(settings, Config) else list(settings.values())
    return docs_url(next((c.docs_url for c in configs if c.docs_url), None))


def exit_code(diagnostics: Sequence[Diagnostic], args, internal_error: bool) -> int:
    if internal_error:
        return 2
    if diagnostics and not args.exit_zero:
        return 1
    return 0


def report_problems(problems, errors: Sequence[str]) -> None:
    """Paths that could not be walked, and internal errors, on stderr; the run goes on."""
    for problem in problems:
        level = "error" if getattr(problem, "fatal", False) else "warning"
        print(f"vjplint: {level}: {problem.path}: {problem.message}", file=sys.stderr)
    for error in errors:
        print(f"vjplint: error: {error}", file=sys.stderr)
