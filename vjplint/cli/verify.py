"""`vjplint verify PATH ...`: prove the residual-plus-None rewrites on real JAX; change nothing.

For each file, the rewrite is what `vjplint --fix` would write (`--unsafe-fixes` includes the
unsafe ones), or, with `--rewritten FILE`, that file's text (to check a rewrite made by hand or
by another tool). Every custom_vjp whose nondiff positions shrank is verified.

Exit codes: 0 every rewritten function verified (or nothing to verify); 1 a function failed
or could not be verified; 2 usage or configuration errors, or JAX is not installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

from vjplint.errors import ConfigError, UsageError
from vjplint.verify.api import FunctionReport, fixes_changed, functions_changed, stop_harnesses, verify_rewrites
from vjplint.verify.process import single_process_accelerator
from vjplint.model.run_facts import NO_FACTS, RunFacts  # noqa: F401 - RunFacts: the Job type
from vjplint.batch.outcomes import display_path
from vjplint.cli.check import progress_for, workspace_for
from vjplint.cli.report import report_problems
from vjplint.cli.shared_options import add_python_option, checked_python
from vjplint.fixes.apply import fix_source
from vjplint.lint.engine import may_contain_findings, prefilter_names
from vjplint.project.index import with_wrappers
from vjplint.project.modules import RunModules
from vjplint.syntax import notebook
from vjplint.syntax.source import SourceError, decode
from vjplint.verify.api import VerifySettings

if TYPE_CHECKING:
    from vjplint.settings.config import Config
    from vjplint.project.workspace import Workspace

# display name, path, original text, rewritten text, settings, what the run derives about the file
Job = Tuple[str, Path, str, str, "Config", "RunFacts"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vjplint verify",
                                description="Verify residual-plus-None rewrites by running them on JAX.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    p.add_argument("--rewritten", metavar="FILE", action="append", default=None,
                   help="verify FILE as the rewrite of PATH instead of vjplint's own fix; repeat it once "
                        "per PATH (the n-th FILE is the rewrite of the n-th PATH)")
    p.add_argument("--unsafe-fixes", action="store_true", help="also verify the unsafe fixes")
    p.add_argument("--output-format", choices=("text", "json"), default="text",
                   help="text: a report per function (default); json: the same as a list of objects")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds allowed per file (default: [tool.vjplint.verify] timeout, or 120)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="files verified at once (default: 2)")
    p.add_argument("--config", default=None, help="explicit pyproject.toml")
    add_python_option(p)
    p.add_argument("--select", default=None, help=argparse.SUPPRESS)
    p.add_argument("--ignore", default=None, help=argparse.SUPPRESS)
    p.add_argument("--extend-select", default=None, help=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", help="one line per function, no details")
    p.add_argument("--verbose", action="store_true", help="tracebacks for internal errors")
    return p


def run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    for name in ("select", "ignore", "extend_select"):
        value = getattr(args, name)
        setattr(args, name, [c.strip() for c in value.split(",") if c.strip()] if value else
                (None if name == "select" else []))
    paths = args.paths or ["."]
    if args.rewritten and len(paths) != len(args.rewritten):
        raise UsageError(f"--rewritten was given {len(args.rewritten)} time(s) for {len(paths)} PATH(s): "
                         f"give one rewritten file per original file")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    args.cache_dir = None
    python = checked_python(args.python)
    workspace = workspace_for(args)
    try:
        config = workspace.anchor(paths)
        VerifySettings.from_config(config)
        jobs = [job for original, rewritten in zip(paths, args.rewritten) for job in _pair_job(original, rewritten,
                                                                                                workspace)] \
            if args.rewritten else _fix_jobs(paths, workspace, args.unsafe_fixes)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    progress = progress_for(args, "files verified") if jobs else None
    if progress is not None:
        progress.begin(len(jobs))  # the first harness may take a while to import JAX
    reports = run_jobs(jobs, args.timeout, args.jobs, None if args.rewritten else bool(args.unsafe_fixes), python,
                       progress)
    if args.unsafe_fixes and not args.rewritten:  # what `--diff --unsafe-fixes` rewrites across modules too
        reports.extend(_cross_module_reports(paths, workspace, args.timeout, python))
    if reports and all(r.missing_jax for r in reports):
        print(f"vjplint: error: {reports[0].reason}", file=sys.stderr)
        return 2
    if args.output_format == "json":
        print(json.dumps([r.to_json() for r in reports], indent=2))
    else:
        sys.stdout.write(format_reports(reports, quiet=args.quiet) or _nothing_to_verify(args, paths, workspace))
    return 0 if all(r.verified for r in reports) else 1


def _nothing_to_verify(args, paths: Sequence[str], workspace: "Workspace") -> str:
    """The answer when no fix rewrites anything, with the next step when unsafe fixes would."""
    if args.unsafe_fixes or args.rewritten:
        return "Nothing to verify: no fix rewrites anything here.\n"
    unsafe = _fix_jobs(paths, workspace, True)
    if not unsafe:
        return "Nothing to verify: no fix rewrites anything here.\n"
    names = ", ".join(job[0] for job in unsafe[:5]) + (f" and {len(unsafe) - 5} more" if len(unsafe) > 5 else "")
    return (f"Nothing to verify: no safe fix rewrites anything here, but unsafe fixes rewrite {names}; "
            f"run `vjplint verify --unsafe-fixes` to verify them.\n")


def _read(path: Path) -> str:
    """A file's text; a notebook's code cells in order, as one module (vjplint.syntax.notebook)."""
    try:
        return decode(notebook.python_bytes(path.name, path.read_bytes())).text
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except SourceError as exc:
        raise UsageError(f"{path}: {exc.message}") from None
    except notebook.NotebookError as exc:
        raise UsageError(f"{path}: not a notebook vjplint can read: {exc}") from None


def _pair_job(original: str, rewritten: str, workspace: "Workspace") -> List[Job]:
    path = Path(original)
    if not path.is_file():
        raise UsageError(f"{original}: not a file (with --rewritten, PATH is the original file)")

    [(path, config, facts)] = with_wrappers([(path, workspace.settings_for(original))], workspace.anchor([original]))
    return [(display_path(path), path, _read(path), _read(Path(rewritten)), config, facts)]


def _fix_jobs(paths: Sequence[str], workspace: "Workspace", unsafe: bool) -> List[Job]:
    problems: list = []
    jobs: List[Job] = []

    # The run's project-local wrappers, as aliases (as `vjplint check --fix` sees them).
    for path, config, facts in with_wrappers(workspace.files(paths, problems), workspace.anchor(paths)):
        names = prefilter_names(config, facts)
        try:
            data = path.read_bytes()
        except OSError as exc:
            print(f"vjplint: warning: {display_path(path)}: cannot read: {exc.strerror or exc}", file=sys.stderr)
            continue
        if not may_contain_findings(data, names):
            continue
        display = display_path(path)
        try:
            text = _read(path)
            new_text, fixed, _ = fix_source(display, text, config, unsafe, path=str(path), facts=facts)
        except Exception as exc:  # the codemod's own failure is reported, the run goes on
            print(f"vjplint: error: {display}: the fix failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if fixed and new_text != text:
            jobs.append((display, path, text, new_text, config, facts))
    report_problems(problems, [])
    return jobs


def _cross_module_reports(paths: Sequence[str], workspace: "Workspace", timeout: Optional[float],
                          python: Optional[str] = None) -> List[FunctionReport]:
    """The rewrites `--fix --unsafe-fixes` makes across modules (fwd/bwd in another file of the run),
    each proven with the rules' rewritten module imported beside it (vjplint.cli.fix_cross._verify)."""
    from vjplint.fixes.cross_module import plan_run

    problems: list = []
    run = [(Path(p), c, f) for p, c, f in with_wrappers(workspace.files(paths, problems), workspace.anchor(paths))
           if str(p).endswith(".py")]
    configs = {p: c for p, c, _ in run}
    facts = {p: f for p, _, f in run}
    candidates = set()
    for path in configs:
        try:
            if b"custom_vjp" in path.read_bytes():
                candidates.add(path)
        except OSError:
            continue
    if not candidates:
        return []
    result = plan_run(list(configs.items()), _read, RunModules(configs), candidates=candidates, facts=facts)
    reports: List[FunctionReport] = []
    by_primal: dict = {}
    for cp in result.plans:
        by_primal.setdefault(cp.primal, []).append(cp)
    for primal, plans in by_primal.items():
        old, new = result.texts.get(primal, (None, None))
        if old is None:
            continue
        companions = sorted({(str(p), *result.texts[p]) for cp in plans for p in cp.parts
                             if p != primal and p in result.texts})
        functions = [{"name": cp.plan.name, "moved_positions": list(cp.plan.moved)} for cp in plans]
        reports.extend(verify_rewrites(str(primal), old, new, functions, configs.get(primal), timeout,
                                       display=display_path(primal), companions=companions,
                                       facts=facts.get(primal, NO_FACTS), python=python))
    return reports


def run_jobs(jobs: Sequence[Job], timeout: Optional[float], workers: Optional[int],
             unsafe: Optional[bool] = None, python: Optional[str] = None,
             progress: Optional[Callable[..., None]] = None) -> List[FunctionReport]:
    """One harness process per file, a few files at once; reports in file order. `unsafe`: the
    rewrites are vjplint's own fixes (every fix kind is proven); None: a rewrite given with
    --rewritten (its residual changes are proven)."""

    finished: List[str] = []
    lock = threading.Lock()

    def one(job: Job) -> List[FunctionReport]:
        try:
            return _one(job)
        finally:
            if progress is not None:  # per file, as each harness ends (`vjplint: 2/5 files verified (a.py)`)
                with lock:
                    finished.append(job[0])
                    progress(len(finished), len(jobs), job[0])

    def _one(job: Job) -> List[FunctionReport]:
        display, path, text, new_text, config, facts = job
        functions = functions_changed(text, new_text, config, facts) if unsafe is None else \
            fixes_changed(text, new_text, config, unsafe, path=str(path), facts=facts)
        if not functions:
            return []
        return verify_rewrites(str(path), text, new_text, functions, config, timeout, display=display, facts=facts,
                               python=python)

    count = 1 if single_process_accelerator() else max(1, min(workers or 2, len(jobs) or 1))
    with ThreadPoolExecutor(max_workers=count) as pool:
        try:
            return [r for batch in pool.map(one, jobs) for r in batch]
        except BaseException:  # Ctrl-C: end the harnesses, or the pool waits for them
            stop_harnesses()
            raise


# -- text output ------------------------------------------------------------------------------------------
def format_reports(reports: Sequence[FunctionReport], quiet: bool = False) -> str:
    """The human report: one headline per function, then its inputs, checks and the hazard."""
    lines: List[str] = []
    for r in reports:
        moved = ", ".join(f"`{m}`" for m in r.moved)
        cell = f"cell {r.cell}:" if r.cell is not None else ""  # a notebook's (as `vjplint check` shows it)
        head = f"{r.filename}:{cell}{r.line}: {r.function}: {r.status}"
        if r.device:
            head += f" on {r.device} (JAX {r.jax_version})"
        if r.status != "verified" and r.reason:
            head += f": {r.reason}"
        lines.append(head)
        if quiet:
            continue
        if moved:
            lines.append(f"    moved      {moved} out of nondiff_argnums")
        if r.codes:
            lines.append(f"    fixes      {', '.join(r.codes)}")
        if r.inputs:
            lines.append("    inputs     " + ", ".join(f"{i['name']}={i['value']} ({i['source']})" for i in r.inputs))
        if r.checks:
            lines.append("    checks     " + ", ".join(_check_text(c) for c in r.checks))
        if r.hazard:
            lines.append(f"    hazard     {_hazard_text(r.hazard)}")
    if reports:
        counts = {s: sum(r.status == s for r in reports) for s in ("verified", "failed", "unverified")}
        where = next((f" on {r.device}{' (' + r.device_kind + ')' if r.device_kind not in ('', r.device) else ''}"
                      f", JAX {r.jax_version}" for r in reports if r.device), "")
        noun = "function" if len(reports) == 1 else "functions"
        lines.append(f"Verified {len(reports)} rewritten {noun}{where}: {counts['verified']} verified, "
                     f"{counts['failed']} failed, {counts['unverified']} unverified.")
    return "\n".join(lines) + ("\n" if lines else "")


def _check_text(check: dict) -> str:
    status = check["status"]
    if status == "passed":
        return f"{check['name']} ok"
    if status == "skipped":
        return f"{check['name']} skipped ({check['detail']})"
    return f"{check['name']} {'FAILED' if status == 'failed' else 'unverifiable'}"


def _hazard_text(hazard: dict) -> str:
    status = {"confirmed": "confirmed", "not-reproduced": "not reproduced",
              "other-error": "not the nondiff tracer error", "none-expected": "none expected"}.get(hazard.get("status", ""), hazard.get("status", ""))
    return f"{status}: {hazard.get('detail', '')}"

