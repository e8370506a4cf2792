"""The parent side of check-grads: what to check in each file, where to run it, the outcomes."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import Position
from vjplint.syntax.notebook import is_notebook
from vjplint.verify.api import (FunctionReport, HarnessOutcome, VerifySettings, _apply_events, _import_hint,
                                run_harness, stop_harnesses)
from vjplint.verify.process import single_process_accelerator
from vjplint.facts.collect import Recognizer, collect
from vjplint.syntax.positions import node_range, source_lines
from vjplint.syntax.source import SourceError, parse
from vjplint.verify.synth import module_callers, plan_function, text_digest

from vjplint.gradcheck import registration

CHILD = Path(__file__).with_name("child.py")
# Not copied with a package: version control, caches, environments.
IGNORED = shutil.ignore_patterns(".git", ".hg", "__pycache__", "*.pyc", ".venv", "venv", "node_modules", ".tox",
                                 ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".vjplint_cache")


@dataclass
class Target:
    """One recognised custom derivative of a file."""

    qualname: str
    kind: str  # "vjp" or "jvp"
    line: int
    location: Position
    end_location: Position
    plan: Optional[Dict[str, Any]]  # what the child needs; None when it cannot be checked
    reason: str = ""  # why not, when plan is None
    live: List[Dict[str, Any]] = field(default_factory=list)  # verdicts of the processes that called it
    first_lines: Tuple[int, ...] = ()  # where its code starts (a code object's first line: decorator or def)


@dataclass
class ModuleJob:
    display: str  # the filename diagnostics show
    path: Path
    text: str
    config: Config
    targets: List[Target] = field(default_factory=list)
    facts: RunFacts = NO_FACTS  # what the run derives about the file (vjplint.model.run_facts)


@dataclass
class Outcome:
    """A target and its verdict: "passed", "failed", "warned" (may be wrong: a disagreement at assumed
    inputs with no second reference), "transform" (a gradient transform, not compared with the
    true gradient) or "unverified"."""

    job: ModuleJob
    target: Target
    report: FunctionReport

    @property
    def status(self) -> str:
        """"passed" only at inputs the project gave; a pass at assumed inputs only is "assumed"."""
        if self.report.status == "verified":
            return "assumed" if self.at == ASSUMED_ONLY else "passed"
        return self.report.status

    @property
    def called(self) -> bool:
        """The project's run called it (a recording or an in-process check)."""
        return bool(self.target.live) or bool(self.target.plan and self.target.plan.get("recorded"))

    @property
    def at(self) -> str:
        """At what it was checked: "at 5 recorded calls", "at given inputs", or ASSUMED_ONLY."""
        sources = [str(i.get("source", "")) for i in self.report.inputs if i.get("role") == "diff"]
        if not sources:
            return ""
        if all(s.startswith(("assumed", "annotation")) for s in sources):
            return ASSUMED_ONLY
        live = [v for v in self.target.live if v.get("result")]
        if live:
            n = sum(int(v["result"].get("checked_at") or 0) for v in live)
            if n:
                return f"at {n} recorded call{'s' if n != 1 else ''}"
        if any(s.startswith("recorded") for s in sources):
            return "at recorded calls"
        if all(s.startswith(("assumed", "annotation")) for s in sources):
            return ASSUMED_ONLY
        return "at given inputs"


ASSUMED_ONLY = "at assumed inputs only"


# -- planning -------------------------------------------------------------------------------------------
def plan_module(job: ModuleJob, module_name: str, recorded: Optional[Dict[str, list]] = None,
                live: Optional[Dict[Tuple[str, int], list]] = None, raises: Sequence[Dict[str, Any]] = ()) -> None:
    """Fill `job.targets` from the source alone (nothing is imported). `recorded`: the arguments
    the project's own runs passed (vjplint.record.read), by "module.qualname"; `live`: the
    verdicts of the processes that called a derivative and checked it there (vjplint.record.read_live),
    by (real file, first line of the code): those are taken as they are, wherever it is defined;
    `raises`: the exceptions the run saw escape (vjplint.record.read_raises): one raised by the
    statement that creates or registers a derivative the run never called (its factory raised)
    is that derivative's failure."""
    config = job.config
    try:
        module = parse(job.text, job.display)
    except SourceError:
        return  # `vjplint check` reports the syntax error
    lines = source_lines(job.text)
    recognizer = Recognizer.for_run(config, job.facts)
    model = collect(module, lines, recognizer)
    examples = dict(VerifySettings.from_config(config).examples)
    last: Dict[str, int] = {}
    for i, d in enumerate(model.derivatives):
        if d.enclosing is None:  # nested ones are unreachable anyway (plan_function says so)
            last[_qualname(d)] = i
    for i, d in enumerate(model.derivatives):
        qualname = _qualname(d)
        start, end = node_range(lines, d.anchor)
        target = Target(qualname, d.kind, start.row, start, end, None)
        job.targets.append(target)
        if d.primal is not None:
            target.first_lines = tuple(sorted({d.primal.lineno} | {dec.lineno for dec in getattr(
                d.primal, "decorator_list", [])}))
            real = os.path.realpath(job.path)
            digest = text_digest(job.text) if live else ""
            target.live = [v for line in target.first_lines for v in (live or {}).get((real, line), [])
                           if v.get("text") in (None, "", digest)]  # not once the file has changed
            if target.live:
                continue  # checked in the process that called it
        if last.get(qualname, i) != i:
            target.reason = f"`{qualname}` is defined again later in the module: only the last one can be reached"
            continue
        # No registration in this file: it is run anyway. Registered at import (elsewhere), it is
        # checked as usual; never registered, JAX raises when it is differentiated, which the
        # child reports as the rule's fault when the primal's own autodiff runs.
        key = f"{module_name}.{qualname}"
        plan = plan_function(model, d, (), examples.get(key) or examples.get(qualname), from_callers=True,
                             recorded=bool(recorded and key in recorded))
        if plan.unverifiable:
            target.reason = plan.unverifiable
            continue
        data = plan.to_json()
        data.update(kind=d.kind, key=key)
        if d.class_node is None and d.enclosing is None:
            data["callers"] = module_callers(job.text, d.name)
        if recorded and key in recorded:
            data["recorded"] = recorded_plan(recorded[key])
        target.plan = data
    _raised_in_run(job, raises)


def _raised_in_run(job: ModuleJob, raises: Sequence[Dict[str, Any]]) -> None:
    """A derivative the run did not call whose creation or registration raised where the run called
    its factory: failed, as a verdict of the run's process (checked there, like a live one)."""
    if not raises or is_notebook(job.path.name):
        return
    real, digest = os.path.realpath(job.path), text_digest(job.text)
    mine = [r for r in raises if r.get("file") == real and r.get("text") in (None, "", digest)]
    for index, r in registration.raised_in_run(mine, real, job.text, job.targets).items():
        t = job.targets[index]
        if not t.live:
            t.live = [{"file": real, "line": r["line"], "qualname": t.qualname, "key": "", "kind": t.kind,
                       "result": registration.failure(t.kind, r["line"], str(r.get("detail", "")),
                                                      "where the project's run called it")}]


def recorded_plan(signatures: list) -> Dict[str, Any]:
    """What the child needs of a function's recordings: each signature's pickled calls (base64),
    the most useful first (concrete before shape-only, more calls first)."""
    import base64

    return {"signatures": [{"signature": sig, "count": count, "abstract": abstract,
                            "calls": [base64.b64encode(c).decode("ascii") for c in calls]}
                           for sig, count, calls, abstract in signatures if calls]}


def _qualname(d: Any) -> str:
    return f"{d.class_node.name}.{d.name}" if d.class_node is not None else d.name


# -- where the module is imported from: a copy -------------------------------------------------------------
class Copies:
    """Temporary copies of the analysed packages: the child imports the copy, so neither the
    import nor the user's code can write into the analysed tree (and Python writes no bytecode:
    the child runs with -B). One copy per package per run, removed at the end."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="vjplint-check-grads-")
        self._done: Dict[str, str] = {}
        self._lock = threading.Lock()

    def locate(self, path: Path) -> Tuple[str, str, Path]:
        """(module name, import directory of the copy, the module's path in the copy)."""
        path = path.resolve()
        parts, base = import_parts(path)
        package = path.name == "__init__.py" or len(parts) > 1
        source = base / parts[0] if package else base
        with self._lock:
            target = self._done.get(str(source))
            if target is None:
                target = os.path.join(self.root, str(len(self._done)))
                if package:
                    shutil.copytree(source, os.path.join(target, parts[0]), ignore=IGNORED, symlinks=True)
                else:
                    _copy_modules(source, target)
                self._done[str(source)] = target
        return ".".join(parts), target, Path(target) / path.relative_to(base)

    def locate_notebook(self, path: Path, text: str) -> Tuple[str, str, Path]:
        """A notebook runs as a module of its code cells in order (`text`, vjplint.syntax.notebook), from a
        copy of its directory (what its cells import, as Jupyter puts it first on sys.path), under
        a name no sibling module has."""
        path = path.resolve()
        with self._lock:
            target = os.path.join(self.root, str(len(self._done)))
            self._done[f"{path}#notebook"] = target
        _copy_modules(path.parent, target)
        module_name = "_vjplint_notebook_" + re.sub(r"\W", "_", path.stem)
        copied = Path(target) / f"{module_name}.py"
        copied.write_text(text, encoding="utf-8")
        return module_name, target, copied

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def import_parts(path: Path) -> Tuple[List[str], Path]:
    """(dotted name's parts, the directory to import it from). Packages are followed up through
    their `__init__.py` files, and across a directory without one inside a package (optax's
    `optax/_src/`: a namespace portion)."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    base = path.parent
    while (base / "__init__.py").is_file() or (base.parent / "__init__.py").is_file():
        parts.insert(0, base.name)
        base = base.parent
    return parts, base


def _copy_modules(directory: Path, target: str) -> None:
    """A directory that is not a package: its modules and its packages (what `import x` can reach)."""
    os.makedirs(target, exist_ok=True)
    for entry in sorted(directory.iterdir()):
        if entry.is_file() and entry.suffix in (".py", ".pyi", ".so", ".pyd", ".json", ".toml", ".txt"):
            shutil.copy2(entry, os.path.join(target, entry.name))
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            shutil.copytree(entry, os.path.join(target, entry.name), ignore=IGNORED, symlinks=True)


# -- running --------------------------------------------------------------------------------------------
def check_module(job: ModuleJob, copies: Copies, timeout: Optional[float], python: Optional[str]) -> List[Outcome]:
    outcomes, pending = prepare_module(job, copies, timeout, python)
    if pending is not None:
        request, limit, chosen, cwd, runnable = pending
        finish_module(run_harness(request, limit, chosen, cwd, script=CHILD), runnable, limit, chosen)
    return outcomes


def prepare_module(job: ModuleJob, copies: Copies, timeout: Optional[float], python: Optional[str]):
    """(every outcome, and what the child needs: (request, time limit, python, directory, the
    outcomes it decides) or None when nothing is left to run)."""
    settings = VerifySettings.from_config(job.config)
    limit = float(timeout if timeout is not None else settings.timeout)
    outcomes = []
    for t in job.targets:
        report = FunctionReport(job.display, t.qualname, t.line, "unverified", t.reason)
        outcomes.append(Outcome(job, t, report))
    for o in outcomes:
        if o.target.live:
            _take_live(o)
    runnable = [o for o in outcomes if o.target.plan is not None and not o.target.live]
    if not runnable:
        return outcomes, None
    try:
        if is_notebook(job.path.name):
            module_name, import_dir, copied = copies.locate_notebook(job.path, job.text)
        else:
            module_name, import_dir, copied = copies.locate(job.path)
    except OSError as exc:
        for o in runnable:
            o.report.reason = f"the module's package cannot be copied to a temporary directory: {exc}"
        return outcomes, None
    root = Path(job.config.root).resolve() if job.config.root else None
    extra = [str(p) for p in (root, root / "src" if root else None) if p is not None and p.is_dir()]
    request = {"path": str(copied), "module_name": module_name,
               "sys_path": [import_dir] + [p for p in extra if p != str(job.path.resolve().parent)],
               "functions": [o.target.plan for o in runnable]}
    return outcomes, (request, limit, python or settings.python, import_dir, runnable)


def finish_module(outcome: HarnessOutcome, runnable: List[Outcome], limit: float, python: Optional[str]) -> None:
    _apply_events(outcome, [o.report for o in runnable], limit)
    _registration_raises(outcome, runnable)
    for o in runnable:
        o.report.reason += _import_hint(o.report)
        if o.report.status in ("failed", "warned") and not any(c.get("code") for c in o.report.checks):
            o.report.status = "unverified"  # a failure without a finding is the harness's, not the rule's
    _import_failures(runnable, python)


def _registration_raises(outcome: HarnessOutcome, runnable: List[Outcome]) -> None:
    """An import that fails on the statement creating a derivative or registering its rules: that
    derivative fails (JAX raises for its definition); the module's others stay "cannot be imported"."""
    error = next((e for e in outcome.events if e.get("event") == "import-error" and e.get("which") == "original"), None)
    line = registration.raising_line(error.get("where", "")) if error else None
    if line is None or not runnable or is_notebook(runnable[0].job.path.name):
        return
    job = runnable[0].job
    target = registration.definition_at(job.text, line, job.targets)
    chosen = next((o for o in runnable if o.target is target), None)
    if chosen is None:
        return
    verdict = registration.failure(target.kind, line, str(error.get("detail", "")), "at import")
    chosen.report.status, chosen.report.reason = verdict["status"], verdict["reason"]
    chosen.report.checks, chosen.report.inputs = verdict["checks"], verdict["inputs"]


def check_together(jobs: Sequence[ModuleJob], copies: Copies, timeout: Optional[float], python: Optional[str],
                   progress: Optional[Callable[..., None]] = None) -> List[Outcome]:
    """Every module in one child process, one after another: on a device that one process at a
    time may hold (a TPU), the device is opened once per run, not once per module. The time
    limit is the sum of the modules'; the events are split by module ("module" events), and
    `progress` counts the modules as the child reaches the next one."""
    outcomes: List[Outcome] = []
    pending, shown = [], []
    for job in jobs:
        made, one = prepare_module(job, copies, timeout, python)
        outcomes += made
        if one is not None:
            pending.append(one)
            shown.append(job.display)
    before = len(jobs) - len(pending)  # checked from their recordings alone: no child needed
    while pending:
        # A child that dies in a module (a crash, its time limit) ends that module only: a fresh
        # child takes the modules after it, as one child per module would have.
        done = _check_in_one_child(pending, shown, before, len(jobs), progress)
        pending, shown, before = pending[done:], shown[done:], before + done
    if progress is not None:
        progress(len(jobs), len(jobs))
    return outcomes


def _check_in_one_child(pending: List[Any], shown: List[str], before: int, total: int,
                        progress: Optional[Callable[..., None]]) -> int:
    """Check `pending` (prepared modules) in one child; how many of them it ended (finished, or
    the one it died in), at least one."""
    request = {"modules": [p[0] for p in pending]}
    limit = sum(p[1] for p in pending)

    def on_event(event: Dict[str, Any]) -> None:
        index = event.get("index")
        if progress is not None and event.get("event") == "module" and isinstance(index, int) and \
                0 < index <= len(shown):
            progress(before + index, total, shown[index - 1])

    result = run_harness(request, limit, pending[0][2], pending[0][3], script=CHILD, on_event=on_event)
    groups: List[List[Dict[str, Any]]] = [[] for _ in pending]
    head = [e for e in result.events if e.get("event") in ("start", "no-jax")]
    index = None
    for event in result.events:
        if event.get("event") == "module":
            index = event.get("index")
        elif index is not None and event.get("event") not in ("start", "no-jax"):
            groups[index].append(event)
    # The module the child was in when it ended is the last one with events: its exit status (a
    # crash, `os._exit(3)`) or time limit is that module's.
    last = max((i for i, group in enumerate(groups) if group), default=-1)
    finished = [bool(g) and g[-1].get("event") == "done" for g in groups]
    # A child that never reached a module (no JAX, a start-up failure) ends them all alike.
    ended = len(pending) if all(finished) or last < 0 else last + 1
    for i, (_request, one_limit, chosen, _cwd, runnable) in enumerate(pending[:ended]):
        piece = HarnessOutcome(head + groups[i], result.returncode if finished[i] or i >= last else None,
                               result.timed_out and not finished[i], result.stderr_tail, result.start_error)
        finish_module(piece, runnable, one_limit, chosen)
    return ended


def _import_failures(outcomes: List[Outcome], python: Optional[str]) -> None:
    """A module that cannot be imported: the reason once (on its first derivative; the others
    point there). What to do when a package is missing (a package that reads its own installed
    version, `importlib.metadata.version(...)`, not installed in the interpreter that runs the
    checks) is said as verify says it (`_import_hint`)."""
    failed = [o for o in outcomes if o.report.status == "unverified" and
              o.report.import_failure is not None]
    if not failed:
        return
    first = failed[0]  # the next step (install it, or `--python`) is verify's: `_import_hint` in finish_module
    for o in failed[1:]:
        if o.report.reason == first.report.reason or "PackageNotFoundError" in (first.report.import_failure or ""):
            o.report.reason = (f"the module cannot be imported (the reason is given for `{first.target.qualname}`, "
                               f"line {first.target.line})")


def _take_live(o: Outcome) -> None:
    """The verdict of the processes that called the derivative (xdist workers, a factory's objects)."""
    verdicts = [v for v in o.target.live if v.get("result")]
    # A failure anywhere (another xdist worker's values, a factory's other object) decides; then a
    # check that decided; a process whose values decided nothing only when none did.
    rank = {"failed": 0, "warned": 1, "verified": 2, "transform": 3}
    chosen = min(verdicts, key=lambda v: rank.get(v["result"].get("status"), 4), default=None)
    if chosen is None:
        return
    result, r = chosen["result"], o.report
    r.status, r.reason = result.get("status", "unverified"), result.get("reason", "")
    r.checks, r.inputs = result.get("checks", []), result.get("inputs", [])
    r.device, r.device_kind, r.jax_version = (chosen.get("device", ""), chosen.get("device_kind", ""),
                                              chosen.get("jax_version", ""))
    r.reference = chosen.get("reference", "")
    if r.status in ("failed", "warned") and not any(c.get("code") for c in r.checks):
        r.status = "unverified"


def check_jobs(jobs: Sequence[ModuleJob], timeout: Optional[float] = None, workers: Optional[int] = None,
               python: Optional[str] = None, progress: Optional[Callable[..., None]] = None) -> List[Outcome]:
    """One child process per module, up to `workers` at once (default: the CPU count)."""
    copies = Copies()
    results: Dict[int, List[Outcome]] = {}
    try:
        if single_process_accelerator() and len(jobs) > 1:
            # A TPU serves one process at a time, and opening it takes seconds: one child for all modules.
            try:
                return check_together(jobs, copies, timeout, python, progress)
            except BaseException:
                stop_harnesses()
                raise
        count = max(1, min(workers or os.cpu_count() or 1, len(jobs) or 1))
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = {pool.submit(check_module, job, copies, timeout, python): i for i, job in enumerate(jobs)}
            try:
                for done, future in enumerate(as_completed(futures), start=1):
                    results[futures[future]] = future.result()
                    if progress is not None:
                        progress(done, len(jobs), jobs[futures[future]].display)
            except BaseException:  # Ctrl-C: end the children, or the pool waits for them
                for future in futures:
                    future.cancel()
                stop_harnesses()
                raise
    finally:
        copies.remove()
    return [o for i in range(len(jobs)) for o in results.get(i, [])]
