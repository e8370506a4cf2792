"""The verification API that `vjplint verify` and `vjplint --fix --verify` call.

    verify_rewrites(original_path, original_text, rewritten_text, functions, config, timeout)
        -> List[FunctionReport]

`functions` lists the rewritten custom_vjp functions as dicts `{"name": str, "moved_positions":
[int, ...]}` (`functions_changed()` computes it from the two texts). Nothing of the user's is
imported here: the harness runs in a separate Python process with a time limit, the user's
project root on `sys.path`, and its results come back as JSON lines.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from vjplint.settings.config import DEFAULT_VERIFY_TIMEOUT as DEFAULT_TIMEOUT, Config, shown, verify_settings
from vjplint.install_hint import install_hint
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import ResidualPlusNone
from vjplint.facts.collect import Recognizer, collect
from vjplint.fixes.apply import offered
from vjplint.fixes.targets import MODULE, model_of, qualname, target_of
from vjplint.lint.engine import lint_source
from vjplint.syntax import notebook
from vjplint.syntax.source import SourceError, parse
from vjplint.verify.kinds import expectation
from vjplint.verify.synth import FunctionPlan, plan_function, plan_plain

HARNESS = Path(__file__).with_name("harness.py")
# The harness processes running now (each in its own session, so a Ctrl-C at the terminal does
# not reach them): stop_harnesses() ends them when the run is interrupted.
_RUNNING: "set[subprocess.Popen[bytes]]" = set()
_RUNNING_LOCK = threading.Lock()
STATUSES = ("verified", "failed", "unverified")


@dataclass
class FunctionReport:
    """The verdict on one rewritten function."""

    filename: str
    function: str
    line: int
    status: str  # "verified", "failed" or "unverified"
    reason: str = ""  # why it failed or is unverified
    moved: List[str] = field(default_factory=list)  # the parameters the fix moved out of nondiff_argnums
    checks: List[Dict[str, Any]] = field(default_factory=list)  # {name, status, detail, max_error}
    hazard: Optional[Dict[str, Any]] = None  # {status: confirmed|not-reproduced|other-error, detail}
    inputs: List[Dict[str, Any]] = field(default_factory=list)  # {name, role, value, source}
    device: str = ""  # "cpu", "cuda:0", ...
    device_kind: str = ""
    jax_version: str = ""
    reference: str = ""  # check-grads: where its references ran, when not as the rule ("references in float64 on the CPU")
    missing_jax: bool = False  # JAX could not be imported: the report says how to install it
    cell: Optional[int] = None  # a notebook's 1-based cell: `line` then counts in it (vjplint.syntax.notebook)
    kind: str = "residual"  # "residual" (nondiff arguments moved) or "rewrite" (any other fix: vjplint.verify.kinds)
    codes: List[str] = field(default_factory=list)  # the rules whose fixes rewrote it
    key: Optional[str] = None  # the fix target (vjplint.fixes.targets) to exclude when it is not proven
    import_failure: Optional[str] = None  # the module (not its rewrite) failed to import: Python's error, as said

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def to_json(self) -> Dict[str, Any]:
        return {"filename": self.filename, "function": self.function, "line": self.line, "status": self.status,
                "reason": self.reason, "moved": self.moved, "checks": self.checks, "hazard": self.hazard,
                "inputs": self.inputs, "device": self.device, "device_kind": self.device_kind,
                "jax_version": self.jax_version, "kind": self.kind, "codes": self.codes,
                **({"cell": self.cell} if self.cell is not None else {})}


@dataclass(frozen=True)
class VerifySettings:
    examples: Tuple[Tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    python: Optional[str] = None  # the interpreter that runs the harness (default: this one)

    @classmethod
    def from_config(cls, config: Config) -> "VerifySettings":
        """The [tool.vjplint.verify] table, already checked when the configuration was loaded
        (vjplint.settings.config.verify_settings)."""
        where = f"{shown(config.source)}: " if config.source else ""
        examples, timeout, python = verify_settings(dict(config.verify), where, config.root)
        return cls(examples, timeout, python)


# -- what changed -----------------------------------------------------------------------------------------
def functions_changed(original_text: str, rewritten_text: str, config: Config = Config(),
                      facts: RunFacts = NO_FACTS) -> List[Dict[str, Any]]:
    """The custom_vjp functions whose nondiff positions shrank between the two texts:
    `[{"name": ..., "moved_positions": [...]}]`, in source order."""
    before, after = _derivatives(original_text, config, facts), _derivatives(rewritten_text, config, facts)
    changed = []
    for key, d in before.items():
        other = after.get(key)
        if other is None:
            continue
        moved = sorted(set(d.nondiff) - set(other.nondiff))
        if moved:
            changed.append({"name": key, "moved_positions": moved})
    return changed


def fixes_changed(original_text: str, rewritten_text: str, config: Config = Config(), unsafe: bool = False,
                  path: Optional[str] = None, facts: RunFacts = NO_FACTS) -> List[Dict[str, Any]]:
    """Every target vjplint's fixes rewrote between the two texts, to be run on JAX: the
    residual rewrites (`functions_changed`, kind "residual") and, for every other fix offered on
    the original, its target (vjplint.fixes.targets) as kind "rewrite" with the rules' codes.
    A module-level statement (VJP401) stands for the module's functions. `key` is the target
    that `fix_text(..., exclude=...)` leaves alone when the item is not proven."""
    items = [dict(i, kind="residual", codes=[], key=i["name"].rsplit(".", 1)[-1])
             for i in functions_changed(original_text, rewritten_text, config, facts)]
    found = model_of(original_text, config, facts)
    if found is None or original_text == rewritten_text:
        return items
    model, module = found
    codes: Dict[str, set] = {}
    for d in lint_source(path or "module.py", original_text, config, path=path, facts=facts).diagnostics:
        fix = d.fix
        if not offered(d, unsafe) or (fix is not None and isinstance(fix.plan, ResidualPlusNone)):
            continue
        target = target_of(model, module, d.location.row)
        if target is not None:
            codes.setdefault(target, set()).add(d.code)
    by_name = {i["name"]: i for i in items}
    for target, found_codes in codes.items():
        names = _module_functions(module, model) if target == MODULE else [target]
        for name in names:
            if name in by_name and by_name[name]["kind"] == "residual":
                by_name[name]["codes"] = sorted(set(by_name[name]["codes"]) | found_codes)
                continue
            item = by_name.setdefault(name, {"name": name, "kind": "rewrite", "codes": [], "key": target})
            item["codes"] = sorted(set(item["codes"]) | found_codes)
            if item not in items:
                items.append(item)
        if target == MODULE and not names:
            items.append({"name": "<module>", "kind": "module", "codes": sorted(found_codes), "key": MODULE})
    return items


def _module_functions(module: Any, model: Any) -> List[str]:
    """What a module-level fix (VJP401's setting) can change: the module's public functions that
    take arguments (`EXAMPLE`-style constants in capitals are the fixtures' own helpers)."""
    import ast

    names = []
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef) and not stmt.name.startswith("_") and not stmt.name.isupper() \
                and (stmt.args.args or stmt.args.posonlyargs):
            names.append(stmt.name)
    return names


def _derivatives(text: str, config: Config, facts: RunFacts = NO_FACTS) -> Dict[str, Any]:
    model = _model(text, config, facts)
    if model is None:
        return {}
    return {_qualname(d): d for d in model.derivatives if d.kind == "vjp" and d.primal is not None}


def _qualname(d: Any) -> str:
    return f"{d.class_node.name}.{d.name}" if d.class_node is not None else d.name


def _model(text: str, config: Config, facts: RunFacts = NO_FACTS):
    try:
        module = parse(text)
    except SourceError:
        return None
    recognizer = Recognizer.for_run(config, facts)
    return collect(module, text.splitlines(), recognizer)


# -- where the module lives ---------------------------------------------------------------------------------
def module_location(path: Path, config: Config) -> Tuple[str, List[str], str]:
    """(dotted module name, sys.path entries, working directory) for importing `path` the way
    the user's project does: packages are followed up through their `__init__.py` files."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    base = path.parent
    while (base / "__init__.py").is_file():
        parts.insert(0, base.name)
        base = base.parent
    root = Path(config.root).resolve() if config.root else Path.cwd().resolve()
    entries = []
    for entry in (base, root, root / "src"):
        if entry.is_dir() and str(entry) not in entries:
            entries.append(str(entry))
    return ".".join(parts) or path.stem, entries, str(root)


# -- the API ------------------------------------------------------------------------------------------------
def verify_rewrites(original_path: str, original_text: str, rewritten_text: str, functions: Sequence[Dict[str, Any]],
                    config: Config = Config(), timeout: Optional[float] = None, display: Optional[str] = None,
                    companions: Sequence[Tuple[str, str, str]] = (), facts: RunFacts = NO_FACTS,
                    python: Optional[str] = None) -> List[FunctionReport]:
    """Run the original and rewritten module in a fresh Python and report on each function.
    `companions`: (path, original text, rewritten text) of the other modules rewritten with it
    (a cross-module fix), imported in the matching version.

    Never raises for problems in the user's code or environment: import errors, exceptions,
    hangs (the time limit), a missing JAX all become reports."""
    settings = VerifySettings.from_config(config)
    limit = float(timeout if timeout is not None else settings.timeout)
    shown = display or original_path
    model = _model(original_text, config, facts)
    module_name, sys_path, cwd = module_location(Path(original_path), config)
    plans, reports = [], []

    by_name = {_qualname(d): d for d in (model.derivatives if model else []) if d.kind == "vjp"}
    examples = dict(settings.examples)
    rewritten_model = None
    for item in functions:
        name = item["name"]
        if item.get("kind") in ("rewrite", "module"):
            if rewritten_model is None:
                rewritten_model = _model(rewritten_text, config, facts)
            report, data = _rewrite_plan(item, rewritten_model, rewritten_text, module_name, examples, shown)
            reports.append(report)
            if data is not None:
                plans.append((data, report))
            continue
        d = by_name.get(name) or next((x for x in by_name.values() if x.name == name), None)
        if d is None:
            reports.append(FunctionReport(shown, name, 0, "unverified",
                                          f"`{name}` is not a custom_vjp defined in the original source"))
            continue
        key = f"{module_name}.{_qualname(d)}"
        plan = plan_function(model, d, item["moved_positions"], examples.get(key) or examples.get(_qualname(d)))
        sig = d.signature
        moved_names = [sig.positional[p] for p in plan.moved if sig and p < len(sig.positional)]
        report = FunctionReport(shown, plan.qualname, plan.line, "unverified", moved=moved_names,
                                codes=list(item.get("codes", ())), key=item.get("key"))
        if plan.unverifiable:
            report.reason = plan.unverifiable
            reports.append(report)
            continue
        data = plan.to_json()
        data["key"] = key
        plans.append((data, report))
        reports.append(report)
    if plans:
        request = {"path": str(Path(original_path).resolve()), "module_name": module_name, "sys_path": sys_path,
                   "original_text": original_text, "rewritten_text": rewritten_text,
                   "functions": [p for p, _ in plans], "companions": []}
        for path, old, new in companions:
            name, entries, _ = module_location(Path(path), config)
            request["companions"].append({"module_name": name, "path": str(Path(path).resolve()),
                                          "original_text": old, "rewritten_text": new})
            sys_path.extend(e for e in entries if e not in sys_path)
        outcome = run_harness(request, limit, python or settings.python, cwd)
        _apply_events(outcome, [r for _, r in plans], limit)
        for _, report in plans:
            report.reason += _import_hint(report)

    if notebook.is_notebook(original_path):  # its text is the code cells in order: lines -> (cell, line)
        cells = notebook.CellMap.of(notebook.split_lines(original_text))
        for report in reports:
            if report.line:
                report.cell, report.line = cells.locate(report.line)
            for item in report.inputs:  # "call site, line 21" -> "call site, cell 4, line 2"
                item["source"] = _CALL_SITE_LINE.sub(lambda m: "cell {}, line {}".format(
                    *cells.locate(int(m.group(1)))), str(item.get("source", "")))
    return reports


def _rewrite_plan(item: Dict[str, Any], model: Any, text: str, module_name: str, examples: Dict[str, str],
                  shown: str) -> Tuple[FunctionReport, Optional[Dict[str, Any]]]:
    """The plan of a target rewritten by a fix other than the residual one, made from the
    rewritten source (its roles are the ones the rewrite declares: VJP103's `(k,)` is static)."""
    import ast

    name, codes = item["name"], list(item.get("codes", ()))
    example = examples.get(f"{module_name}.{name}") or examples.get(name)
    plan = FunctionPlan(name, name, 0, ())
    if item["kind"] == "module":
        plan.params = []
    elif model is None:
        plan.unverifiable = "the rewritten module does not parse"
    else:
        d = next((x for x in model.derivatives if x.enclosing is None and qualname(x) == name), None)
        fn = next((s for s in ast.parse(text).body if isinstance(s, ast.FunctionDef) and s.name == name), None) \
            if d is None else None
        if d is not None:
            plan = plan_function(model, d, (), example)
        elif fn is not None:
            plan = plan_plain(model, fn, name, example)
        else:
            plan.unverifiable = f"`{name}` is not a module-level function of the rewritten module"
    report = FunctionReport(shown, plan.qualname, plan.line, "unverified", kind=item["kind"], codes=codes,
                            key=item.get("key"))
    if plan.unverifiable:
        report.reason = plan.unverifiable
        return report, None
    data = plan.to_json()
    data.update(key=f"{module_name}.{name}", kind=item["kind"], codes=codes, expect=expectation(codes))
    return report, data


_CALL_SITE_LINE = re.compile(r"(?<=call site, )line (\d+)")


@dataclass
class HarnessOutcome:
    events: List[Dict[str, Any]]
    returncode: Optional[int]
    timed_out: bool
    stderr_tail: str
    start_error: str = ""


def run_harness(request: Dict[str, Any], timeout: float, python: Optional[str], cwd: str,
                script: Path = HARNESS, on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> HarnessOutcome:
    """Run the harness script (or another child script with the same protocol, e.g. vjplint
    check-grads'); kill its whole process group at the time limit. `on_event` sees each event
    while the child runs (within a quarter of a second: check-grads' progress on the one-process
    path); the outcome holds them all either way."""
    with tempfile.TemporaryDirectory(prefix="vjplint-verify-") as tmp:
        request_path, result_path, stderr_path = (os.path.join(tmp, n) for n in ("request.json", "result.jsonl",
                                                                                   "stderr.txt"))
        # `-I` drops PYTHONPATH with the rest of the environment's Python settings; a JAX that is
        # installed only there (a module system, a lent accelerator) must still be found, after
        # the project's own roots.
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        with open(request_path, "w", encoding="utf-8") as handle:
            json.dump({**request, "python_path": inherited}, handle)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the accelerator politely
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        command = [python or sys.executable, "-I", "-B", str(script), request_path, result_path]
        timed_out, returncode, start_error = False, None, ""
        with open(stderr_path, "wb") as stderr:
            try:
                proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=stderr,
                                        start_new_session=os.name == "posix")
            except OSError as exc:
                start_error = f"cannot start {command[0]}: {exc.strerror or exc}"
            else:
                with _RUNNING_LOCK:
                    _RUNNING.add(proc)
                try:
                    returncode, timed_out = _wait(proc, timeout, result_path, _Follower(result_path, on_event))
                except BaseException:  # Ctrl-C in this thread
                    _kill(proc)
                    raise
                finally:
                    with _RUNNING_LOCK:
                        _RUNNING.discard(proc)
        events = []
        if os.path.exists(result_path):
            with open(result_path, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    try:
                        events.append(json.loads(line))
                    except ValueError:
                        break  # a line cut off by the kill
        with open(stderr_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4000))
            tail = handle.read().decode("utf-8", "replace")
    return HarnessOutcome(events, returncode, timed_out, tail, start_error)


class _Follower:
    """Hands the child's events to `on_event` as complete lines reach the result file."""

    def __init__(self, result_path: str, on_event: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        self.path, self.on_event, self.offset = result_path, on_event, 0

    def __call__(self) -> None:
        if self.on_event is None:
            return
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return
        complete = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next look
        self.offset += len(complete)
        for line in complete.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                self.on_event(event)


def _wait(proc: "subprocess.Popen[bytes]", timeout: float, result_path: str,
          follow: Optional[Callable[[], None]] = None) -> Tuple[Optional[int], bool]:
    """(exit code, timed out). The time limit runs from the start, or, on a TPU, from when the
    child has the chip (its first event, `waiting-for-chip` then `chip`): the wait for another
    vjplint child to let go of it is not the module's time. `follow` is called at each look."""
    deadline = time.monotonic() + timeout
    waiting: Optional[bool] = None  # None: not known yet
    while True:
        try:
            code = proc.wait(timeout=max(0.0, min(0.25, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
        else:
            if follow is not None:
                follow()
            return code, False
        if follow is not None:
            follow()
        if waiting is not False:
            first = _first_events(result_path)
            if first[:1] == ["waiting-for-chip"]:
                if "chip" in first:
                    deadline, waiting = time.monotonic() + timeout, False  # the wait ends now
                else:
                    deadline, waiting = time.monotonic() + timeout, True  # not counted yet
            elif first:
                waiting = False
        if time.monotonic() >= deadline:
            _kill(proc)
            return None, True


def _first_events(result_path: str) -> List[str]:
    try:
        with open(result_path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return []
    kinds = []
    for line in head.splitlines()[:2]:
        try:
            kinds.append(json.loads(line).get("event", ""))
        except ValueError:
            break
    return kinds


def stop_harnesses() -> None:
    """Kill every harness process this process started that is still running (an interrupted
    run: its worker threads are still waiting on them, and a TPU stays held until they end)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for proc in running:
        _kill(proc)


def _kill(proc: "subprocess.Popen[bytes]") -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover
            proc.kill()
    except OSError:
        pass
    proc.wait()


def _apply_events(outcome: HarnessOutcome, reports: List[FunctionReport], limit: float) -> None:
    start: Dict[str, Any] = {}
    begun = None
    done: Dict[str, Dict[str, Any]] = {}
    failure = ""
    import_failure: Optional[str] = None
    for event in outcome.events:
        kind = event.get("event")
        if kind == "start":
            start = event
        elif kind == "no-jax":
            failure = (f"JAX cannot be imported by {event.get('python')} ({event.get('detail')}); verification "
                       f"needs it: {install_hint('verify')}")
            for r in reports:
                r.missing_jax = True
        elif kind == "import-error":
            where = f" at {event['where']}" if event.get("where") else ""
            if event.get("which") == "rewritten":
                failure = f"the rewritten module fails to import{where}: {event.get('detail')}"
                for r in reports:
                    r.status = "failed"
            else:
                failure = f"the module cannot be imported{where}: {event.get('detail')}"
                import_failure = str(event.get("detail"))
        elif kind == "begin":
            begun = event.get("name")
        elif kind == "function":
            done[event["name"]] = event
            begun = None
    for r in reports:
        r.device, r.device_kind, r.jax_version = (start.get("device", ""), start.get("device_kind", ""),
                                                  start.get("jax_version", ""))
        r.reference = start.get("reference", "")
    for r in reports:
        name = r.function
        event = done.get(name)
        if event is not None:
            r.status = event.get("status", "unverified")
            r.reason = event.get("reason", "")
            r.checks = event.get("checks", [])
            r.hazard = event.get("hazard")
            r.inputs = event.get("inputs", [])
            continue
        if failure:
            r.reason = failure
            r.import_failure = import_failure
        elif outcome.start_error:
            r.reason = outcome.start_error
        elif outcome.timed_out:
            if name == begun:
                r.reason = f"the time limit ({limit:g} s) ran out while verifying it"
            elif not start:
                r.reason = f"the time limit ({limit:g} s) ran out while importing JAX"
            elif not any(e.get("event") == "imported" for e in outcome.events):
                r.reason = f"the time limit ({limit:g} s) ran out while importing the module (does it hang?)"
            else:
                r.reason = f"not reached: the time limit ({limit:g} s) ran out on an earlier function"
        else:
            tail = stderr_summary(outcome.stderr_tail)
            r.reason = (f"the verification process exited with code {outcome.returncode} "
                        f"{'while verifying it' if name == begun else 'before reaching it'}"
                        f"{': ' + tail if tail else ''}")


_WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")


def stderr_summary(stderr: str, lines: int = 3, limit: int = 300) -> str:
    """What a dead process's stderr says, for its reason: its last lines of substance, joined, at
    most `limit` characters cut at a space. Python warnings (`file:line: XWarning: ...` and the
    indented source line after it) are left out: on a TPU, JAX warns about hugepages at start-up,
    which is not why a process died."""
    kept: List[str] = []
    skipping = False
    for line in stderr.splitlines():
        if _WARNING_LINE.match(line):
            skipping = True
            continue
        if skipping and line.startswith((" ", "\t")):
            continue  # the warning's source line
        skipping = False
        if line.strip():
            kept.append(line.strip())
    text = " ".join(kept[-lines:])
    if len(text) > limit:
        cut = text[-limit:]
        space = cut.find(" ")
        text = "..." + (cut[space:] if 0 <= space < limit // 2 else cut)
    return text


_NOT_INSTALLED = ("PackageNotFoundError", "ModuleNotFoundError", "No module named")


def _import_hint(report: FunctionReport) -> str:
    """The next step when the module's own imports fail because a package is missing from the
    interpreter that ran it: install it there, or name one that has it (the reports of `vjplint
    verify` and of check-grads, whose `--python` and default interpreter are the same)."""
    failure = report.import_failure  # Python's words (ModuleNotFoundError...), read as such
    if failure is None or not any(m in failure for m in _NOT_INSTALLED):
        return ""
    return ("; install the package into that interpreter (`pip install -e .` in its project), or run "
            "with `--python PATH` naming an interpreter that has it (or set `python` in [tool.vjplint.verify])")
