"""Command line: argument parsing, exit codes and printing only. Work happens in the core.

Imports are lazy: `vjplint --version` and runs over files with no custom derivatives import
neither libcst nor JAX.
"""

from __future__ import annotations

import os
import sys

from vjplint import __version__

TYPE_CHECKING = False  # not typing's: importing typing is itself a cost here
if TYPE_CHECKING:  # argparse, pathlib and typing cost more than a pre-commit run (vjplint.fastpath)
    import argparse
    from pathlib import Path
    from typing import List, Optional, Sequence

SUBCOMMANDS = ("check", "rule", "verify", "server")


class UsageError(Exception):
    pass


def _codes(value: str) -> List[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def _check_parser(prog: str = "vjplint") -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(prog=prog, description="Lint JAX custom_vjp/custom_jvp code.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .); - reads stdin")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply (with --fix) or show unsafe fixes")
    p.add_argument("--diff", action="store_true", help="print fixes as a unified diff; write nothing")
    p.add_argument("--verify", action="store_true", help="with --fix/--diff: prove each rewrite on JAX first")
    p.add_argument("--show-fixes", action="store_true", help="show the fix for each fixable diagnostic")
    p.add_argument("--select", type=_codes, default=None, help="rule codes or prefixes to enable (replaces)")
    p.add_argument("--ignore", type=_codes, default=[], help="rule codes or prefixes to disable")
    p.add_argument("--extend-select", type=_codes, default=[], help="rule codes or prefixes to add")
    p.add_argument("--output-format", choices=("text", "concise", "json", "sarif", "github", "lsp"),
                   default=None, help="output format (default: text)")
    p.add_argument("--stdin-filename", default=None, help="the name used for stdin input")
    p.add_argument("--config", default=None, help="explicit pyproject.toml")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when diagnostics remain")
    p.add_argument("--exit-non-zero-on-fix", action="store_true",
                   help="exit 1 when a fix changed something, even if no diagnostics remain")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply exclude settings to files named on the command line too (pre-commit)")
    p.add_argument("--statistics", action="store_true", help="count diagnostics per rule")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.add_argument("--cache-dir", default=None, help="where the result cache lives")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: CPU count)")
    p.add_argument("-q", "--quiet", action="store_true", help="print diagnostics only, no summary")
    p.add_argument("--verbose", action="store_true", help="tracebacks for internal errors")
    p.add_argument("--version", action="version", version=f"vjplint {__version__}")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args
    try:
        if not args or args[0] not in ("rule", "server", "verify"):
            from vjplint.fastpath import try_check

            fast = try_check(args)  # files that cannot hold a finding: answered without the machinery
            if fast is not None:
                return fast
        if args and args[0] == "rule":
            return _rule_command(args[1:])
        if args and args[0] == "server":
            from vjplint.server import main as server_main

            return server_main(args[1:])
        if args and args[0] == "verify":
            from vjplint.verify.command import main as verify_main

            return verify_main(args[1:])
        if args and args[0] == "check":
            args = args[1:]
        return _check_command(args)
    except UsageError as exc:
        print(f"vjplint: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vjplint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # pragma: no cover - the last guard; tests assert it is never reached
        if verbose:
            raise
        print(f"vjplint: internal error: {type(exc).__name__}: {exc} (run with --verbose for a traceback)",
              file=sys.stderr)
        return 2


def load_effective_config(args: argparse.Namespace, anchor: Path):
    from pathlib import Path

    from vjplint.config import ConfigError, find_pyproject, load_config, with_overrides

    try:
        path = Path(args.config) if args.config else find_pyproject(anchor)
        if args.config and not path.is_file():
            raise UsageError(f"--config {args.config}: no such file")
        config = load_config(path)
        return with_overrides(config, select=args.select, ignore=args.ignore, extend_select=args.extend_select)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _check_command(argv: List[str]) -> int:
    from pathlib import Path

    from vjplint import fastpath

    started_ns = fastpath.now_ns()  # before anything is read: the replay's "racy" reference
    parser = _check_parser()
    args = parser.parse_args(argv)
    paths = args.paths or ["."]
    if args.verify and not (args.fix or args.diff):
        raise UsageError("--verify needs --fix or --diff (or use `vjplint verify PATH`)")
    stdin = paths == ["-"]
    if "-" in paths and not stdin:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    anchor = Path(args.stdin_filename).parent if stdin and args.stdin_filename else Path(paths[0] if not stdin else ".")
    config = load_effective_config(args, anchor if anchor.exists() else Path.cwd())
    if config.source and not (args.config or args.cache_dir or args.no_cache or stdin):
        from vjplint.engine import prefilter_names  # a valid [tool.vjplint]: pre-commit's fast path may
                                                    # trust it while it is unchanged (vjplint.fastpath)
        fastpath.remember_config(config.source, started_ns, prefilter_names(config))
    if args.cache_dir:  # relative to the working directory, unlike the config file's `cache-dir`
        from dataclasses import replace

        config = replace(config, cache_dir=os.path.abspath(args.cache_dir))
    output_format = args.output_format or os.environ.get("VJPLINT_OUTPUT_FORMAT") or "text"
    if stdin:
        return _check_stdin(args, config, output_format)
    if args.fix or args.diff:
        from vjplint.fixes.apply import run_fix_command

        return run_fix_command(args, config, paths, output_format)
    from vjplint.runner import lint_paths

    progress = _progress_printer() if sys.stderr.isatty() and not args.quiet else None
    run = lint_paths(paths, config, jobs=args.jobs, use_cache=not args.no_cache, progress=progress,
                     force_exclude=args.force_exclude)
    report_problems(run.problems, run.internal_errors)
    diagnostics = run.diagnostics
    from vjplint.runner import LazySources

    text = emit(diagnostics, args, output_format, sources=LazySources(run.files))
    code = exit_code(diagnostics, args, bool(run.internal_errors) or any(p.fatal for p in run.problems))
    if not args.no_cache and not run.problems and not run.internal_errors:  # a clean answer: replayable
        fastpath.record(argv, started_ns, [str(f.path) for f in run.files] + run.visited, text, code)
    return code


def _lines(outcome) -> List[str]:
    decoded = outcome.result.decoded
    from vjplint.positions import source_lines

    return source_lines(decoded.text) if decoded is not None else []


def _check_stdin(args: argparse.Namespace, config, output_format: str) -> int:
    from vjplint.engine import lint_source
    from vjplint.positions import source_lines

    data = sys.stdin.buffer.read()
    name = args.stdin_filename or "-"
    if args.fix or args.diff:
        from vjplint.fixes.apply import run_fix_stdin

        return run_fix_stdin(args, config, name, data, output_format)
    result = lint_source(name, data, config)
    report_problems([], result.errors)
    lines = source_lines(result.decoded.text) if result.decoded else []
    emit(result.diagnostics, args, output_format, sources={name: lines})
    return exit_code(result.diagnostics, args, bool(result.errors))


def emit(diagnostics, args: argparse.Namespace, output_format: str, sources=None, fixed_count: int = 0) -> str:
    from vjplint.output import OutputContext, get_formatter

    if output_format in ("json", "sarif", "lsp"):
        from vjplint.fixes.apply import attach_fix_edits

        attach_fix_edits(diagnostics, sources or {})
    ctx = OutputContext(show_fixes=args.show_fixes, unsafe_fixes=args.unsafe_fixes, statistics=args.statistics,
                        fixed_count=fixed_count, sources=sources or {})
    text = get_formatter(output_format)(diagnostics, ctx)
    if args.quiet and output_format in ("text", "concise"):
        text = "\n".join(l for l in text.splitlines() if ":" in l and not l.startswith(("Found ", "Fixed "))) + "\n"
        text = "" if text == "\n" else text
    sys.stdout.write(text)
    sys.stdout.flush()
    return text


def exit_code(diagnostics, args: argparse.Namespace, internal_error: bool) -> int:
    if internal_error:
        return 2
    if diagnostics and not args.exit_zero:
        return 1
    return 0


def report_problems(problems, errors: Sequence[str]) -> None:
    for problem in problems:
        level = "error" if getattr(problem, "fatal", False) else "warning"
        print(f"vjplint: {level}: {problem.path}: {problem.message}", file=sys.stderr)
    for error in errors:
        print(f"vjplint: error: {error}", file=sys.stderr)


def _progress_printer():
    import time

    start = time.monotonic()
    state = {"shown": False}

    def show(done: int, total: int) -> None:
        if time.monotonic() - start < 2.0 and done < total:
            return
        if done >= total and not state["shown"]:
            return
        state["shown"] = True
        sys.stderr.write(f"\r\033[Kvjplint: {done}/{total} files")
        if done >= total:
            sys.stderr.write("\r\033[K")
        sys.stderr.flush()

    return show


def _rule_command(argv: List[str]) -> int:
    from vjplint.rules.docs import render_rule
    from vjplint.rules.registry import all_rules

    import argparse

    parser = argparse.ArgumentParser(prog="vjplint rule", description="Show a rule's documentation.")
    parser.add_argument("code", nargs="?", help="a rule code, e.g. VJP101, or its name")
    parser.add_argument("--all", action="store_true", help="every rule")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    rules = all_rules()
    if args.all:
        chosen = list(rules.values())
    elif args.code:
        key = args.code.upper()
        match = rules.get(key) or next((r for r in rules.values() if r.NAME == args.code), None)
        if match is None:
            raise UsageError(f"unknown rule {args.code!r}; `vjplint rule --all` lists them")
        chosen = [match]
    else:
        raise UsageError("give a rule code (e.g. `vjplint rule VJP101`) or --all")
    if args.output_format == "json":
        import json

        from vjplint.rules.docs import rule_to_json

        data = [rule_to_json(r) for r in chosen]
        print(json.dumps(data if args.all else data[0], indent=2))
    else:
        print("\n\n".join(render_rule(r) for r in chosen))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
