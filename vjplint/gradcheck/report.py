"""check-grads outcomes as diagnostics (every output format renders them) and as a summary."""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Sequence

from vjplint.settings.config import _matches
from vjplint.diagnostics import Diagnostic
from vjplint.gradcheck.api import Outcome

NOT_CHECKED = "VJP509"


def runtime_codes() -> List[str]:
    from vjplint.rules.registry import all_rules

    return [code for code, rule in all_rules().items() if rule.RUNTIME]


def enabled_codes(select: Optional[Sequence[str]], ignore: Sequence[str]) -> FrozenSet[str]:
    """The runtime codes check-grads reports: all of them, or those `--select` names, less the
    ignored ones. (`select` in pyproject.toml chooses lint rules; it does not apply here.)"""
    return frozenset(c for c in runtime_codes() if (select is None or _matches(c, select)) and not _matches(c, ignore))


def diagnostics_for(outcome: Outcome) -> List[Diagnostic]:
    """One diagnostic per failing code (its first failed check; the others are counted), or a
    VJP509 for a derivative that could not be checked."""
    from vjplint.rules.registry import all_rules

    rules = all_rules()
    t, r = outcome.target, outcome.report
    found: Dict[str, List[dict]] = {}
    for check in r.checks:
        if check.get("status") == "failed" and check.get("code") in rules:
            found.setdefault(check["code"], []).append(check)
    made = []
    for code, checks in sorted(found.items()):
        more = [c["name"] for c in checks[1:]]
        message = f"`{t.qualname}`: {checks[0]['detail']}" + (f" (also {', '.join(more)})" if more else "")
        made.append(_diagnostic(rules[code], outcome, message))
    if not found and outcome.status == "unverified":
        made.append(_diagnostic(rules[NOT_CHECKED], outcome, f"`{t.qualname}` not checked: {r.reason}"))
    return made


def _diagnostic(rule, outcome: Outcome, message: str) -> Diagnostic:
    t = outcome.target
    return Diagnostic(code=rule.CODE, name=rule.NAME, message=message, severity=rule.SEVERITY,
                      filename=outcome.job.display, location=t.location, end_location=t.end_location,
                      noqa_row=t.location.row)


def filtered(diagnostics: List[Diagnostic], lines: List[str], enabled: FrozenSet[str],
             per_file: Sequence[str]) -> List[Diagnostic]:
    """Selection, per-file-ignores and `# noqa` comments, as linting applies them."""
    from vjplint.lint.engine import _apply_noqa

    kept = [d for d in diagnostics if d.code in enabled and not _matches(d.code, per_file)]
    if not kept:
        return kept
    return _apply_noqa(kept, lines, set(enabled), kept[0].filename)  # VJP901 is not enabled: no noqa warnings


def summary(outcomes: Sequence[Outcome], modules: int, seconds: float, suppressed: int = 0) -> str:
    """The closing line; `suppressed` failed derivatives whose every finding a `# noqa`, an ignore
    or per-file-ignores hides (like ruff's "N hidden"), so the count never hides them silently."""
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "unverified")}
    device = next((f" on {_device(o)}, JAX {o.report.jax_version}" for o in outcomes if o.report.device), "")
    noun = "derivative" if len(outcomes) == 1 else "derivatives"
    hidden = f" ({suppressed} of them suppressed by noqa or ignores)" if suppressed else ""
    files = "module" if modules == 1 else "modules"
    return (f"check-grads: {len(outcomes)} custom {noun} in {modules} {files}{device}, {seconds:.1f} s: "
            f"{counts['passed']} passed, {counts['failed']} failed{hidden}, {counts['unverified']} not checked.")


def _device(o: Outcome) -> str:
    kind = o.report.device_kind
    return o.report.device + (f" ({kind})" if kind not in ("", o.report.device) else "")


def details(outcomes: Sequence[Outcome]) -> str:
    """One line per derivative with its checks (`--show-checks`)."""
    lines = []
    for o in outcomes:
        r = o.report
        head = f"{r.filename}:{o.target.line}: {o.target.qualname} (custom_{o.target.kind}): {o.status}"
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
    if status == "skipped":
        return f"{c['name']} skipped ({c.get('detail', '')})"
    return f"{c['name']} FAILED"


def to_json(outcomes: Sequence[Outcome]) -> List[dict]:
    return [{"filename": o.report.filename, "function": o.target.qualname, "kind": o.target.kind,
             "line": o.target.line, "status": o.status, "reason": o.report.reason if o.status != "passed" else "",
             "checks": o.report.checks, "inputs": o.report.inputs, "device": o.report.device,
             "jax_version": o.report.jax_version} for o in outcomes]
