"""check-grads outcomes as diagnostics (every output format renders them) and as a summary."""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Sequence

from vjplint.settings.config import _matches
from vjplint.diagnostics import Diagnostic, Severity
from vjplint.gradcheck.api import Outcome
from vjplint.lint.engine import _apply_noqa
from vjplint.rules.registry import all_rules

NOT_CHECKED = "VJP509"


def runtime_codes() -> List[str]:
    return [code for code, rule in all_rules().items() if rule.RUNTIME]


def enabled_codes(select: Optional[Sequence[str]], ignore: Sequence[str]) -> FrozenSet[str]:
    """The runtime codes check-grads reports: all of them, or those `--select` names, less the
    ignored ones. (`select` in pyproject.toml chooses lint rules; it does not apply here.)"""
    return frozenset(c for c in runtime_codes() if (select is None or _matches(c, select)) and not _matches(c, ignore))


def diagnostics_for(outcome: Outcome) -> List[Diagnostic]:
    """One diagnostic per code (its first failed check, errors before warnings; the others are
    counted), an info one for a rule not compared with the true gradient on purpose (a gradient
    transform), or a VJP509 for a derivative that could not be checked."""
    rules = all_rules()
    t, r = outcome.target, outcome.report
    found: Dict[str, List[dict]] = {}
    for check in r.checks:
        if check.get("status") in ("failed", "noted") and check.get("code") in rules:
            found.setdefault(check["code"], []).append(check)
    made = []
    for code, checks in sorted(found.items()):
        checks = sorted(checks, key=lambda c: SEVERITY_ORDER.index(_severity(c, rules[code])))
        more = [c["name"] for c in checks[1:]]
        message = f"`{t.qualname}`: {checks[0]['detail']}" + (f" (also {', '.join(more)})" if more else "")
        made.append(_diagnostic(rules[code], outcome, message, _severity(checks[0], rules[code])))
    if not any(c.get("status") == "failed" for cs in found.values() for c in cs) and outcome.status == "unverified":
        made.append(_diagnostic(rules[NOT_CHECKED], outcome, f"`{t.qualname}` not checked: {r.reason}"))
    return made


SEVERITY_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)


def _severity(check: dict, rule) -> Severity:
    """A check's own severity ("warning": a disagreement that may come from assumed inputs;
    "info": a gradient transform, not compared on purpose), else the rule's."""
    if check.get("status") == "noted":
        return Severity.INFO
    return Severity(check["severity"]) if check.get("severity") else rule.SEVERITY


def _diagnostic(rule, outcome: Outcome, message: str, severity: Optional[Severity] = None) -> Diagnostic:
    t = outcome.target
    return Diagnostic(code=rule.CODE, name=rule.NAME, message=message, severity=severity or rule.SEVERITY,
                      filename=outcome.job.display, location=t.location, end_location=t.end_location,
                      noqa_row=t.location.row)


def filtered(diagnostics: List[Diagnostic], lines: List[str], enabled: FrozenSet[str],
             per_file: Sequence[str]) -> List[Diagnostic]:
    """Selection, per-file-ignores and `# noqa` comments, as linting applies them."""
    kept = [d for d in diagnostics if d.code in enabled and not _matches(d.code, per_file)]
    if not kept:
        return kept
    return _apply_noqa(kept, lines, set(enabled), kept[0].filename)  # VJP901 is not enabled: no noqa warnings


def summary(outcomes: Sequence[Outcome], modules: int, seconds: float, suppressed: int = 0,
            recorded: bool = False) -> str:
    """The closing lines; `suppressed` failed derivatives whose every finding a `# noqa`, an ignore
    or per-file-ignores hides (like ruff's "N hidden"), so the count never hides them silently.
    Derivatives that may be wrong (a warning) and gradient transforms are counted when present; a
    pass at assumed inputs only is not counted as a pass. Then the coverage: what the run called,
    what was checked, and (with a recording) what it never called, with where it is defined."""
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "assumed", "failed", "warned", "transform",
                                                                 "unverified")}
    device = next((f" on {_device(o)}, JAX {o.report.jax_version}" + _reference(o) for o in outcomes if o.report.device), "")
    noun = "derivative" if len(outcomes) == 1 else "derivatives"
    hidden = f" ({suppressed} of them suppressed by noqa or ignores)" if suppressed else ""
    files = "module" if modules == 1 else "modules"
    extra = (f", {counts['warned']} may be wrong" if counts["warned"] else "") + \
        (f", {counts['transform']} gradient transform{'s' if counts['transform'] != 1 else ''} (not compared)"
         if counts["transform"] else "") + \
        (f", {counts['assumed']} at assumed inputs only (not counted as passed)" if counts["assumed"] else "")
    line = (f"check-grads: {len(outcomes)} custom {noun} in {modules} {files}{device}, {seconds:.1f} s: "
            f"{counts['passed']} passed, {counts['failed']} failed{hidden}{extra}, {counts['unverified']} not "
            f"checked.")
    if not recorded:
        return line
    called = [o for o in outcomes if o.called]
    checked = [o for o in outcomes if o.status != "unverified"]
    never = [o for o in outcomes if not o.called]
    at = [o.at for o in outcomes if o.status == "passed" and o.at.startswith("at ") and o.at[3:4].isdigit()]
    calls = sum(int(a.split()[1]) for a in at)
    passed_at = f" ({calls} recorded call{'s' if calls != 1 else ''} checked)" if calls else ""
    line += (f"\ncoverage: {len(outcomes)} under the paths, {len(called)} called by the run, {len(checked)} checked, "
             f"{counts['passed']} passed{passed_at}, {counts['failed']} failed, {counts['unverified']} not checked, "
             f"{len(never)} never called")
    if never:
        shown = [f"{o.report.filename}:{o.target.line} `{o.target.qualname}`" for o in never[:20]]
        more = f" and {len(never) - 20} more" if len(never) > 20 else ""
        line += "\nnever called by the run: " + ", ".join(shown) + more
    return line


def _reference(o: Outcome) -> str:
    """Where the references ran when the device lacks float64 (vjplint/gradcheck/reference.py)."""
    return f" ({o.report.reference})" if o.report.reference else ""


def _device(o: Outcome) -> str:
    kind = o.report.device_kind
    return o.report.device + (f" ({kind})" if kind not in ("", o.report.device) else "")


def details(outcomes: Sequence[Outcome]) -> str:
    """One line per derivative with its checks (`--show-checks`)."""
    lines = []
    for o in outcomes:
        r = o.report
        shown = {"warned": "may be wrong", "transform": "gradient transform (not compared)",
                 "assumed": "passed " + o.at}.get(o.status, o.status)
        if o.status == "passed" and o.at:
            shown += " " + o.at
        head = f"{r.filename}:{o.target.line}: {o.target.qualname} (custom_{o.target.kind}): {shown}"
        if o.status == "unverified":
            head += f": {r.reason}"
        lines.append(head)
        if r.inputs:
            lines.append("    inputs  " + ", ".join(f"{i['name']}={i['value']} ({i['source']})" for i in r.inputs))
        if r.checks:
            lines.append("    checks  " + ", ".join(_check(c) for c in r.checks))
    return "\n".join(lines) + ("\n" if lines else "")


def _check(c: dict) -> str:
    status = c.get("status")
    if status == "passed":
        return f"{c['name']} ok"
    if status == "noted":
        return f"{c['name']} not compared (gradient transform)"
    if status == "failed" and c.get("severity") == "warning":
        return f"{c['name']} MAY BE WRONG"
    if status == "skipped":
        return f"{c['name']} skipped ({c.get('detail', '')})"
    return f"{c['name']} FAILED"


def to_json(outcomes: Sequence[Outcome]) -> List[dict]:
    return [{"filename": o.report.filename, "function": o.target.qualname, "kind": o.target.kind,
             "line": o.target.line, "status": o.status, "at": o.at, "called": o.called,
             "reason": o.report.reason if o.status not in ("passed", "assumed") else "",
             "checks": o.report.checks, "inputs": o.report.inputs, "device": o.report.device,
             "jax_version": o.report.jax_version, **({"reference": o.report.reference} if o.report.reference else {})}
            for o in outcomes]
