"""`vjplint check-grads PATH ...`: run every recognised custom_vjp/custom_jvp on JAX and check its
rules against finite differences, its primal output, and jit/vmap (vjplint.gradcheck).

Opt-in: this is the one command that runs the user's code, each module in its own Python
process with a time limit, imported from a temporary copy of its package. Findings are
diagnostics (VJP501-VJP504; VJP509 for a derivative that could not be checked) in any output
format; a disagreement found only at assumed inputs with no second reference is a warning
("may"), a gradient transform (an identity primal, a straight-through estimator) an info.
`--record -- CMD` first runs CMD recording the arguments each derivative receives
(vjplint.record); recorded inputs come before EXAMPLE_ARGS(), call sites and probing.
Exit codes: 0 nothing failed (derivatives not checked, warnings and infos do not fail the run);
1 a check failed with an error; 2 usage or configuration errors, or JAX is not installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import List, Sequence

from vjplint.settings.options import OUTPUT_FORMATS
from vjplint.errors import ConfigError, UsageError


class RecordingError(UsageError):
    """The recording command failed before calling any custom derivative, or called none."""
from vjplint import record
from vjplint.batch.cache import cache_root
from vjplint.batch.fastpath import ensure_cache_root
from vjplint.batch.outcomes import display_path
from vjplint.cli.check import progress_for
from vjplint.cli.shared_options import add_python_option, checked_python
from vjplint.cli.report import emit, report_problems
from vjplint.diagnostics import Severity
from vjplint.gradcheck import report
from vjplint.gradcheck.api import ModuleJob, check_jobs, import_parts, plan_module
from vjplint.lint.engine import may_contain_findings, prefilter_names
from vjplint.project.index import with_wrappers
from vjplint.project.workspace import Overrides, Workspace
from vjplint.syntax import notebook
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import SourceError, decode
from vjplint.verify.api import VerifySettings
from vjplint.verify.process import hold_the_chip_for


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vjplint check-grads",
                                description="Check custom_vjp/custom_jvp rules against finite differences on JAX "
                                            "(runs the code, in subprocesses).")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                   help=f"output format: {', '.join(OUTPUT_FORMATS[:-1])} or {OUTPUT_FORMATS[-1]} (default: text)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds allowed per module (default: [tool.vjplint.verify] timeout, or 120)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="modules checked at once (default: the CPU count)")
    add_python_option(p)
    p.add_argument("--select", default=None, metavar="CODES", help="VJP5 codes to report (default: all of them)")
    p.add_argument("--ignore", default=None, metavar="CODES", help="VJP5 codes not to report (e.g. VJP509)")
    p.add_argument("--config", default=None, help="explicit pyproject.toml")
    p.add_argument("--show-checks", action="store_true", help="list every derivative with its checks")
    p.add_argument("--report", metavar="FILE", default=None, help="write every derivative's checks as JSON to FILE")
    p.add_argument("--statistics", action="store_true", help="count diagnostics per code instead of listing them")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when checks failed")
    p.add_argument("-q", "--quiet", action="store_true", help="diagnostics only, no summary")
    p.add_argument("--verbose", action="store_true", help="tracebacks for internal errors")
    p.add_argument("--record", action="store_true",
                   help="first run the command after `--` (e.g. `-- pytest tests/`), recording the arguments each "
                        "custom_vjp/custom_jvp receives into the cache directory; those recorded inputs are then used "
                        "before EXAMPLE_ARGS(), call sites and probing (without --record, earlier recordings are)")
    p.add_argument("--no-recorded", action="store_true", help="ignore recorded inputs")
    return p


def _codes(value: "str | None") -> "List[str] | None":
    return [c.strip() for c in value.split(",") if c.strip()] if value else None


def run(argv: Sequence[str]) -> int:
    argv = list(argv)
    command: List[str] = []
    if "--" in argv:
        command, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    args = _parser().parse_args(argv)
    args.python = checked_python(args.python)
    if args.record and not command:
        raise UsageError("--record needs the command to run after `--`, e.g. `vjplint check-grads --record -- pytest "
                         "tests/`")
    if command and not args.record:
        raise UsageError(f"a command after `--` ({command[0]}) is run only with --record")
    select, ignore = _codes(args.select), _codes(args.ignore) or []
    for flag, codes in (("--select", select or []), ("--ignore", ignore)):
        unknown = [c for c in codes if not any(r.startswith(c) for r in report.runtime_codes())]
        if unknown:
            raise UsageError(f"{flag}: {unknown[0]!r} names no check-grads code (VJP501-VJP504, VJP509)")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    started = time.monotonic()
    paths = args.paths or ["."]
    try:
        workspace = Workspace(Overrides(ignore=tuple(ignore)), args.config)
        VerifySettings.from_config(workspace.anchor(paths))
        problems: list = []
        jobs: List[ModuleJob] = []
        recorded_dir = str(cache_root(workspace.anchor(paths)) / record.SUBDIR)
        if args.record:
            _record(command, recorded_dir, args.quiet, paths)
        recorded = {} if args.no_recorded else record.read(recorded_dir)
        live = {} if args.no_recorded else record.read_live(recorded_dir)[0]
        raises = [] if args.no_recorded else record.read_raises(recorded_dir)

        # The run's project-local wrappers, as aliases (as `vjplint check` sees them); without the
        # index cache, which would be written into the analysed tree (check-grads never writes there).
        for path, config, facts in with_wrappers(workspace.files(paths, problems), workspace.anchor(paths), use_cache=False):
            try:
                data = path.read_bytes()
            except OSError as exc:
                print(f"vjplint: warning: {display_path(path)}: cannot read: {exc.strerror or exc}", file=sys.stderr)
                continue
            if not may_contain_findings(data, prefilter_names(config, facts)) or path.suffix == ".pyi":
                continue
            try:  # a notebook runs as its code cells in order, one module (vjplint.syntax.notebook)
                text = notebook.read(data).text if notebook.is_notebook(path.name) else decode(data).text
            except (SourceError, notebook.NotebookError):
                continue  # `vjplint check` reports it
            job = ModuleJob(display_path(path), path, text, config, facts=facts)
            plan_module(job, _module_name(path), recorded, live, raises)
            if job.targets:
                jobs.append(job)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    report_problems(problems, [])
    # `vjplint: 2/5 modules checked (b.py)` on a terminal once the run has lasted two seconds (as
    # check, --fix and verify show theirs); 0/N while the first child imports JAX.
    progress = progress_for(args, "modules checked") if jobs else None
    if progress is not None:
        progress.begin(len(jobs))
    outcomes = check_jobs(jobs, args.timeout, args.jobs, args.python, progress)
    if outcomes and all(o.report.missing_jax for o in outcomes if o.target.plan is not None) and \
            any(o.target.plan is not None for o in outcomes):
        reason = next(o.report.reason for o in outcomes if o.report.missing_jax)
        print(f"vjplint: error: {reason}", file=sys.stderr)
        return 2
    diagnostics, sources, settings, suppressed = [], {}, {}, 0
    for job in jobs:
        lines = source_lines(job.text)
        sources[job.display], settings[job.display] = lines, job.config
        enabled = report.enabled_codes(select, job.config.ignore)
        per_file = job.config.ignored_for(job.config.relative_path(str(job.path)))
        for outcome in (o for o in outcomes if o.job is job):
            kept = report.filtered(report.diagnostics_for(outcome), lines, enabled, per_file)
            suppressed += outcome.status == "failed" and not any(d.severity == Severity.ERROR for d in kept)
            if notebook.is_notebook(job.path.name):  # rows of the joined cells -> (cell, row in it)
                kept = notebook.to_cells(kept, notebook.CellMap.of(lines))
            diagnostics.extend(kept)
    diagnostics.sort(key=lambda d: d.sort_key())
    failing = [d for d in diagnostics if d.severity == Severity.ERROR]  # warnings ("may") and infos do not fail
    args.show_fixes = args.unsafe_fixes = False
    machine = args.output_format not in ("text", "concise")
    emit(diagnostics, args, args.output_format, sources, settings or workspace.anchor(paths), checked=bool(outcomes),
         failed=bool(failing))
    out = sys.stderr if machine else sys.stdout
    if args.show_checks:
        out.write(report.details(outcomes))
    if not args.quiet:
        out.write(report.summary(outcomes, len(jobs), time.monotonic() - started, suppressed,
                                 recorded=bool(recorded or live)) + "\n")
    if args.report:
        with open(args.report, "w", encoding="utf-8") as handle:
            json.dump(report.to_json(outcomes), handle, indent=2)
    return 1 if failing and not args.exit_zero else 0


def _record(command: List[str], directory: str, quiet: bool, paths: Sequence[str]) -> None:
    """Run `command` with every Python it starts recording custom derivative arguments into
    `directory` (vjplint.record), replacing earlier recordings; each process checks the derivatives
    defined under `paths` that it called, at exit. Its output goes to stderr: stdout is the
    report's. A run that fails before calling any custom derivative is an error."""
    import os
    import shutil
    import subprocess
    import tempfile

    ensure_cache_root(os.path.dirname(directory))
    os.makedirs(directory, exist_ok=True)
    record.clear(directory)
    hook = tempfile.mkdtemp(prefix="vjplint-record-")
    try:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([record.sitecustomize_dir(hook)] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env[record.ENV] = directory
        env[record.PATHS_ENV] = os.pathsep.join(os.path.realpath(p) for p in paths)
        # A pytest (and each xdist worker, which ends without running exit handlers) checks at its end.
        env["PYTEST_PLUGINS"] = ",".join([record.LOADED_AS] + [p for p in env.get("PYTEST_PLUGINS", "").split(",")
                                                                 if p.strip()])
        # On a TPU the command opens the chip (it checks in its own process): it takes its turn
        # behind the lock vjplint's children take, or a concurrent run's child fails to open it.
        chip = hold_the_chip_for(env)
        try:
            code = subprocess.run(command, env=env, stdout=sys.stderr.fileno()).returncode
        except OSError as exc:
            raise UsageError(f"--record: cannot run {command[0]!r}: {exc.strerror or exc}") from None
        finally:
            if chip is not None:
                chip.close()
    finally:
        shutil.rmtree(hook, ignore_errors=True)
    found, live = record.read(directory), record.read_live(directory)[0]
    called = len(set(found) | {v["key"] or v["qualname"] for vs in live.values() for v in vs})
    shown = " ".join(command)
    if not called and not record.read_raises(directory):  # a factory whose registration raised: its verdict
        what = (f"`{shown}` exited with status {code} before calling any custom_vjp/custom_jvp" if code else
                f"`{shown}` exited with status 0 and called no custom_vjp/custom_jvp")
        raise RecordingError(f"--record: nothing was recorded: {what}. Run the command alone and make it pass "
                             f"(its output is above), point it at the tests that call your custom derivatives, or "
                             f"drop --record to check with assumed inputs")
    if not quiet:
        status = f"exit status {code}" + ("; the tests failed, the recording is kept" if code else "")
        print(f"vjplint: recorded {called} custom derivative{'s' if called != 1 else ''} while running `{shown}` "
              f"({status})", file=sys.stderr)


def _module_name(path) -> str:
    return ".".join(import_parts(path)[0])
