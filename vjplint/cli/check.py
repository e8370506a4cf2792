"""`vjplint [check] PATH...`: lint, or (with --fix/--diff) fix, and print."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING, Dict, List, Optional

from vjplint.settings.options import CHECK_OPTIONS, COLOR_CHOICES, OUTPUT_FORMATS, SUBCOMMANDS
from vjplint.errors import ConfigError, UsageError
from vjplint import __version__
from vjplint.batch import fastpath

if TYPE_CHECKING:
    import argparse

    from vjplint.project.workspace import Workspace


def _codes(value: str) -> List[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def _patterns(value: str) -> List[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _jobs(value: str) -> int:
    import argparse

    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of jobs: {value!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be at least 1, not {jobs}")
    return jobs


# argparse details of the options in vjplint.settings.options (type, choices, default, metavar).
_DETAILS = {
    "--select": {"type": _codes, "default": None, "metavar": "CODES"},
    "--ignore": {"type": _codes, "default": [], "metavar": "CODES"},
    "--extend-select": {"type": _codes, "default": [], "metavar": "CODES"},
    "--extend-ignore": {"type": _codes, "default": [], "metavar": "CODES"},
    "--fixable": {"type": _codes, "default": None, "metavar": "CODES"},
    "--unfixable": {"type": _codes, "default": [], "metavar": "CODES"},
    "--extend-fixable": {"type": _codes, "default": [], "metavar": "CODES"},
    "--exclude": {"type": _patterns, "default": None, "metavar": "PATTERNS"},
    "--extend-exclude": {"type": _patterns, "default": [], "metavar": "PATTERNS"},
    "--output-file": {"default": None, "metavar": "FILE"},
    "--color": {"choices": COLOR_CHOICES, "default": None},
    "--output-format": {"choices": OUTPUT_FORMATS, "default": None},
    "--jobs": {"type": _jobs, "default": None},
    "--show-settings": {"default": None, "metavar": "PATH"},
}


def check_parser(prog: str = "vjplint") -> "argparse.ArgumentParser":
    import argparse

    width = max(map(len, SUBCOMMANDS))
    commands = "\n".join(f"  {name:<{width}} {text}" for name, text in SUBCOMMANDS.items())
    epilog = f"commands:\n{commands}\n\n`vjplint COMMAND --help` describes each." if prog == "vjplint" else None
    p = argparse.ArgumentParser(prog=prog, description="Lint JAX custom_vjp/custom_jvp code.", epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .); - reads stdin")
    for names, takes_value, text, _ in CHECK_OPTIONS:
        if takes_value:
            p.add_argument(*names, help=text, **_DETAILS.get(names[0], {"default": None}))
        else:
            p.add_argument(*names, action="store_true", help=text)
    p.add_argument("--version", action="version", version=f"vjplint {__version__}")
    return p


def plain_arguments(argv: List[str]) -> Optional[SimpleNamespace]:
    """What `check_parser().parse_args(argv)` gives, without building the parser (8 ms of a
    one-file check, argparse's import included), for the command lines pre-commit and most users
    type: flags without values, spelled in full, and one run of paths that do not start with `-`.
    None for anything else (a value, `--help`, `-`, an abbreviation, paths on both sides of a
    flag, which argparse refuses), which argparse then reads as always.
    `tests/cli/test_start_up.py` compares both on every flag."""
    flags: Dict[str, str] = {}
    values: Dict[str, object] = {}
    for names, takes_value, _, _ in CHECK_OPTIONS:
        dest = next((n for n in names if n.startswith("--")), names[0]).lstrip("-").replace("-", "_")
        if takes_value:
            default = _DETAILS.get(names[0], {}).get("default")
            values[dest] = list(default) if isinstance(default, list) else default
        else:
            values[dest] = False
            flags.update((name, dest) for name in names)
    paths: List[str] = []
    ended = False  # a flag after the paths: argparse takes no more paths
    for arg in argv:
        dest = flags.get(arg)
        if dest is not None:
            values[dest] = True
            ended = ended or bool(paths)
        elif arg and not arg.startswith("-") and not ended:
            paths.append(arg)
        else:
            return None
    return SimpleNamespace(paths=paths, **values)


def workspace_for(args: "argparse.Namespace") -> "Workspace":
    """The files' settings: each file's nearest [tool.vjplint], or --config for all, with the
    command line's rule selection on top."""
    from vjplint.project.workspace import Overrides, Workspace

    def given(name: str) -> tuple:
        return tuple(getattr(args, name, None) or ())

    fixable = getattr(args, "fixable", None)
    exclude = getattr(args, "exclude", None)
    overrides = Overrides(select=tuple(args.select) if args.select is not None else None,
                          ignore=tuple(args.ignore), extend_select=tuple(args.extend_select),
                          cache_dir=os.path.abspath(args.cache_dir) if getattr(args, "cache_dir", None) else None,
                          extend_ignore=given("extend_ignore"), fixable=tuple(fixable) if fixable is not None else None,
                          unfixable=given("unfixable"), extend_fixable=given("extend_fixable"),
                          exclude=tuple(exclude) if exclude is not None else None,
                          extend_exclude=given("extend_exclude"))
    try:
        return Workspace(overrides, args.config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def run(argv: List[str], prog: str = "vjplint") -> int:
    """`prog`: how the command was spelled (`vjplint check` or plain `vjplint`), for --help and usage errors."""
    started_ns = fastpath.now_ns()  # before anything is read: the replay's "racy" reference
    args = plain_arguments(argv)
    if args is None:
        args = check_parser(prog).parse_args(argv)
    paths = args.paths or ["."]
    if args.verify and not (args.fix or args.diff):
        raise UsageError("--verify needs --fix or --diff (or use `vjplint verify PATH`)")
    stdin = paths == ["-"]
    if "-" in paths and not stdin:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    if args.add_noqa and (args.fix or args.diff or stdin):
        raise UsageError("--add-noqa cannot be combined with --fix, --diff or stdin")
    if args.show_settings is not None and (args.paths or args.fix or args.diff or args.add_noqa):
        raise UsageError("--show-settings takes one PATH and no other paths, --fix, --diff or --add-noqa")
    if args.show_files and (args.fix or args.diff or args.add_noqa or stdin or args.show_settings is not None):
        raise UsageError("--show-files lists the files a check would read: no --fix, --diff, --add-noqa, "
                         "--show-settings or stdin")
    if args.watch and (stdin or args.add_noqa or args.show_files or args.show_settings is not None or args.diff):
        raise UsageError("--watch checks (or, with --fix, fixes) files again as they change: "
                         "no stdin, --diff, --add-noqa, --show-files or --show-settings")
    output_format = args.output_format or os.environ.get("VJPLINT_OUTPUT_FORMAT") or "text"
    if args.statistics and output_format not in STATISTICS_FORMATS:
        raise UsageError(f"--statistics prints a text table (text, concise) or a JSON list (json), "
                         f"not {output_format!r}")
    if args.watch:
        from vjplint.cli.watch import run_watch

        return run_watch(args, argv, paths, output_format, lambda: _run_once(args, argv, paths, stdin,
                                                                               output_format, started_ns))
    return _run_once(args, argv, paths, stdin, output_format, started_ns)


STATISTICS_FORMATS = ("text", "concise", "json")  # ruff's: any other format refuses --statistics


def _run_once(args, argv: List[str], paths: List[str], stdin: bool, output_format: str, started_ns: int) -> int:
    workspace = workspace_for(args)
    try:
        if args.show_files:
            return _show_files(args, workspace, paths)
        if args.show_settings is not None:
            from vjplint.cli.show_settings import run_show_settings

            return run_show_settings(args.show_settings, workspace, output_format)
        if stdin:
            return _check_stdin(args, workspace, output_format)
        if args.add_noqa:
            from vjplint.cli.add_noqa import run_add_noqa

            code = run_add_noqa(args, workspace, paths, progress=progress_for(args))
        elif args.fix or args.diff:
            from vjplint.cli.fix import run_fix_command

            code = run_fix_command(args, workspace, paths, output_format, progress=progress_for(args))
        else:
            code = _check_paths(args, argv, workspace, paths, output_format, started_ns)
    except ConfigError as exc:  # a pyproject.toml met on the way is broken
        raise UsageError(str(exc)) from None
    if not (args.config or args.cache_dir or args.no_cache):
        from vjplint.lint.engine import prefilter_names

        for source in workspace.config_files():  # valid [tool.vjplint] tables: pre-commit's fast path may
            config = workspace.settings_for(os.path.dirname(source))  # trust them while they are unchanged
            fastpath.remember_config(source, started_ns, prefilter_names(config))
    return code


def _check_paths(args, argv: List[str], workspace: "Workspace", paths: List[str], output_format: str,
                 started_ns: int) -> int:
    from vjplint.batch.outcomes import LazySources
    from vjplint.batch.runner import lint_paths
    from vjplint.cli.report import emit, exit_code, report_problems, session_for

    session = session_for(output_format)
    run = lint_paths(paths, workspace, jobs=args.jobs, use_cache=not args.no_cache, progress=progress_for(args),
                     force_exclude=args.force_exclude, session=session)
    report_problems(run.problems, run.internal_errors)
    failed = bool(run.internal_errors) or any(p.fatal for p in run.problems)
    if not run.files and not failed:
        print(f"vjplint: warning: No Python files found under {', '.join(paths)}", file=sys.stderr)
    hidden = 0
    if any(f.result.diagnostics for f in run.files):  # both read findings only (most pre-commit runs have none)
        from vjplint.cli.fix_cross import say_cross_module_fixes, say_named_elsewhere

        hidden = say_cross_module_fixes(run.files)  # rules in another module of this run: the fix is available
        say_named_elsewhere(run.files)  # fwd/bwd named by another file of the run: an unsafe fix, saying why
    diagnostics = run.diagnostics
    settings = {f.display: f.config for f in run.files}
    text = emit(diagnostics, args, output_format, LazySources(run.files), settings, checked=bool(run.files),
                failed=failed, facts={f.display: f.facts for f in run.files if f.facts}, session=session,
                hidden_fixes=hidden)
    code = exit_code(diagnostics, args, failed)
    if not args.no_cache and not run.problems and not run.internal_errors and not args.output_file \
            and not args.watch and text is not None:  # a clean answer on stdout, uncoloured: replayable
        fastpath.record(argv, started_ns, [str(f.path) for f in run.files] + run.visited, text, code)
    return code


def _show_files(args, workspace: "Workspace", paths: List[str]) -> int:
    """ruff's --show-files: every file a check of `paths` would read, absolute, sorted."""
    from vjplint.cli.report import report_problems

    problems: list = []
    files = workspace.files(paths, problems, force_exclude=args.force_exclude)
    report_problems(problems, [])
    out = sys.stdout
    for name in sorted({os.path.abspath(path) for path, _ in files}):
        out.write(name + "\n")
    out.flush()
    if not files:
        print(f"vjplint: warning: No Python files found under {', '.join(paths)}", file=sys.stderr)
    return 2 if any(getattr(p, "fatal", False) for p in problems) else 0


def _check_stdin(args, workspace: "Workspace", output_format: str) -> int:
    from vjplint.cli.report import emit, exit_code, report_problems, session_for
    from vjplint.lint.engine import lint_source
    from vjplint.syntax.positions import source_lines

    data = sys.stdin.buffer.read()
    name = args.stdin_filename or "-"
    path = os.path.abspath(args.stdin_filename) if args.stdin_filename else None
    config = workspace.settings_for(path if path else os.getcwd())
    notebook = name.endswith(".ipynb")  # its cells' Python (vjplint.syntax.notebook)
    if (args.fix or args.diff) and notebook:
        print("vjplint: error: --fix and --diff read a notebook from its file, not from stdin", file=sys.stderr)
        return 2
    if args.fix or args.diff:
        from vjplint.cli.fix import run_fix_stdin

        return run_fix_stdin(args, config, name, data, output_format)
    session = session_for(output_format)
    if notebook:
        from vjplint.batch.parallel import lint_notebook

        result = lint_notebook(name, data, config, path, session=session)
    else:
        result = lint_source(name, data, config, path=path, session=session)
    report_problems([], result.errors)
    lines = source_lines(result.decoded.text) if result.decoded else []
    emit(result.diagnostics, args, output_format, {name: lines}, config, failed=bool(result.errors), session=session)
    return exit_code(result.diagnostics, args, bool(result.errors))


PROGRESS_DELAY_S = 2.0  # runs shorter than this never show the counter (vjplint.output.progress)


def progress_for(args, noun: str = "files"):
    """A file counter on stderr while files are linted, only when stderr is a terminal (never in
    pipes, files or CI logs) and not with -q."""
    from vjplint.output.progress import on_terminal

    return _progress_printer(noun) if on_terminal(sys.stderr, args.quiet) else None


def _progress_printer(noun: str = "files"):
    from vjplint.output.progress import ProgressLine

    return ProgressLine(noun, delay=PROGRESS_DELAY_S)
