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
from vjplint.verify.api import FunctionReport, VerifySettings, _apply_events, _import_hint, run_harness, stop_harnesses
from vjplint.verify.harness import single_process_accelerator
from vjplint.facts.collect import Recognizer, collect
from vjplint.syntax.positions import node_range, source_lines
from vjplint.syntax.source import SourceError, parse
from vjplint.verify.synth import plan_function

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
        return "passed" if self.report.status == "verified" else self.report.status


# -- planning -------------------------------------------------------------------------------------------
def plan_module(job: ModuleJob, module_name: str, recorded: Optional[Dict[str, list]] = None) -> None:
    """Fill `job.targets` from the source alone (nothing is imported). `recorded`: the arguments
    the project's own runs passed (vjplint.record.read), by "module.qualname"."""
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
        if last.get(qualname, i) != i:
            target.reason = f"`{qualname}` is defined again later in the module: only the last one can be reached"
            continue
        # No registration in this file: it is run anyway. Registered at import (elsewhere), it is
        # checked as usual; never registered, JAX raises when it is differentiated, which the
        # child reports as the rule's fault when the primal's own autodiff runs.
        key = f"{module_name}.{qualname}"
        plan = plan_function(model, d, (), examples.get(key) or examples.get(qualname), from_callers=True)
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


def module_callers(text: str, name: str) -> List[str]:
    """The module-level functions that call `name`, directly or through one another (by name, in
    the source): what check-grads runs to see the derivative used as its module uses it."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    rules = {a.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr in ("defvjp", "defjvp", "defjvps") for a in n.args if isinstance(a, ast.Name)}
    uses = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.name in rules or any(
                isinstance(dec, ast.Attribute) and dec.attr in ("defvjp", "defjvp") for dec in node.decorator_list)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            uses[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    found: List[str] = []
    targets = {name}
    while True:
        new = [f for f, names in uses.items() if f not in found and f != name and names & targets]
        if not new:
            return found
        found += new
        targets |= set(new)


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
    settings = VerifySettings.from_config(job.config)
    limit = float(timeout if timeout is not None else settings.timeout)
    outcomes = []
    for t in job.targets:
        report = FunctionReport(job.display, t.qualname, t.line, "unverified", t.reason)
        outcomes.append(Outcome(job, t, report))
    runnable = [o for o in outcomes if o.target.plan is not None]
    if not runnable:
        return outcomes
    try:
        if is_notebook(job.path.name):
            module_name, import_dir, copied = copies.locate_notebook(job.path, job.text)
        else:
            module_name, import_dir, copied = copies.locate(job.path)
    except OSError as exc:
        for o in runnable:
            o.report.reason = f"the module's package cannot be copied to a temporary directory: {exc}"
        return outcomes
    root = Path(job.config.root).resolve() if job.config.root else None
    extra = [str(p) for p in (root, root / "src" if root else None) if p is not None and p.is_dir()]
    request = {"path": str(copied), "module_name": module_name,
               "sys_path": [import_dir] + [p for p in extra if p != str(job.path.resolve().parent)],
               "functions": [o.target.plan for o in runnable]}
    outcome = run_harness(request, limit, python or settings.python, import_dir, script=CHILD)
    _apply_events(outcome, [o.report for o in runnable], limit)
    for o in runnable:
        o.report.reason += _import_hint(o.report.reason)
        if o.report.status in ("failed", "warned") and not any(c.get("code") for c in o.report.checks):
            o.report.status = "unverified"  # a failure without a finding is the harness's, not the rule's
    return outcomes


def check_jobs(jobs: Sequence[ModuleJob], timeout: Optional[float] = None, workers: Optional[int] = None,
               python: Optional[str] = None, progress: Optional[Callable[[int, int], None]] = None) -> List[Outcome]:
    """One child process per module, up to `workers` at once (default: the CPU count)."""
    copies = Copies()
    results: Dict[int, List[Outcome]] = {}
    try:
        # A TPU serves one process at a time: the children would only queue on its lock.
        count = 1 if single_process_accelerator() else max(1, min(workers or os.cpu_count() or 1, len(jobs) or 1))
        if progress is not None:
            progress(0, len(jobs))
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = {pool.submit(check_module, job, copies, timeout, python): i for i, job in enumerate(jobs)}
            try:
                for done, future in enumerate(as_completed(futures), start=1):
                    results[futures[future]] = future.result()
                    if progress is not None:
                        progress(done, len(jobs))
            except BaseException:  # Ctrl-C: end the children, or the pool waits for them
                for future in futures:
                    future.cancel()
                stop_harnesses()
                raise
    finally:
        copies.remove()
    return [o for i in range(len(jobs)) for o in results.get(i, [])]
