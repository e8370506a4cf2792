"""Rule documentation: rendered from each rule class's docstring (one source of truth)."""

from __future__ import annotations

import inspect
from typing import Any, Dict, Type

from vjplint.rules.base import Rule
from vjplint.rules.registry import rule_url

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")


def rule_doc(rule: Type[Rule]) -> str:
    return inspect.cleandoc(rule.__doc__ or "")


def render_rule(rule: Type[Rule]) -> str:
    state = "enabled by default" if rule.DEFAULT_ENABLED else "off by default (select it, or target = \"vjp3\")"
    fix = f"Fix: {rule.FIX}." if rule.FIX else "Fix: none."
    header = f"# {rule.NAME} ({rule.CODE})\n\nSeverity: {rule.SEVERITY.value}; {state}. {fix}\n"
    return f"{header}\n{rule_doc(rule)}\n"


def render_markdown(rule: Type[Rule]) -> str:
    return render_rule(rule) + f"\n<!-- generated from vjplint/rules by `python -m vjplint.rules.docs` -->\n"


def rule_to_json(rule: Type[Rule]) -> Dict[str, Any]:
    return {"code": rule.CODE, "name": rule.NAME, "severity": rule.SEVERITY.value,
            "default_enabled": rule.DEFAULT_ENABLED, "fix": rule.FIX, "url": rule_url(rule.CODE),
            "explanation": rule_doc(rule)}


def write_docs(directory: str = "docs/rules") -> None:
    """Regenerate docs/rules/*.md and the index."""
    from pathlib import Path

    from vjplint.rules.registry import all_rules

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    index = ["# vjplint rules\n", "| code | name | severity | default | fix |", "|---|---|---|---|---|"]
    for code, rule in all_rules().items():
        (out / f"{code}.md").write_text(render_markdown(rule), encoding="utf-8")
        index.append(f"| [{code}]({code}.md) | {rule.NAME} | {rule.SEVERITY.value} | "
                     f"{'on' if rule.DEFAULT_ENABLED else 'off'} | {rule.FIX or ''} |")
    (out / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_docs()
