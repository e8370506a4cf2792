"""Rule documentation: rendered from each rule class's docstring (one source of truth)."""

from __future__ import annotations

import inspect
from typing import Any, Dict, Type

from vjplint.links import DEFAULT_DOCS_URL, rule_url
from vjplint.rules.base import Rule
from vjplint.rules.registry import ENGINE_CODES, all_rules
from vjplint.settings.redirects import REDIRECTS, redirected

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")


def rule_doc(rule: Type[Rule]) -> str:
    return inspect.cleandoc(rule.__doc__ or "")


def render_rule(rule: Type[Rule]) -> str:
    if getattr(rule, "RUNTIME", False):
        state = "reported by `vjplint check-grads`, which runs the rule on JAX (never by linting)"
    else:
        state = "enabled by default" if rule.DEFAULT_ENABLED else "off by default (select it, or target = \"vjp3\")"
        if not rule.DEFAULT_ENABLED and rule.DEFAULT_REPORTS:
            state += ", except where it fails today, which is reported by default"
    fix = f"Fix: {rule.FIX}." if rule.FIX else "Fix: none."
    header = f"# {rule.NAME} ({rule.CODE})\n\nSeverity: {rule.SEVERITY.value}; {state}. {fix}\n"
    return f"{header}\n{rule_doc(rule)}\n"


def render_markdown(rule: Type[Rule]) -> str:
    return render_rule(rule) + "\n<!-- generated from vjplint/rules by `python -m vjplint.rules.docs` -->\n"


def rule_to_json(rule: Type[Rule], docs_url: str = DEFAULT_DOCS_URL) -> Dict[str, Any]:
    return {"code": rule.CODE, "name": rule.NAME, "severity": rule.SEVERITY.value,
            "default_enabled": rule.DEFAULT_ENABLED, "fix": rule.FIX, "url": rule_url(rule.CODE, docs_url),
            "explanation": rule_doc(rule)}


ENGINE_PAGES = {  # the codes the engine reports itself (vjplint.rules.registry.ENGINE_CODES)
    "VJP900": """\
# syntax-error (VJP900)

Severity: error; always reported (by the engine, not a rule), even under `# noqa`. Fix: none.

## What it does

Reports a file vjplint cannot read as Python: one whose bytes do not decode (not UTF-8 and no
PEP 263 `# -*- coding: ... -*-` line that fits), or whose text the running interpreter's parser
rejects, with the parser's own message and position.

## Why is this bad?

Nothing in such a file is checked: every rule is silent there, so a clean run would hide it.
Python raises the same `SyntaxError` when the module is imported.

## Example

```python
def f(x)
    return x
```

## Use instead

```python
def f(x):
    return x
```
""",
    "VJP901": """\
# invalid-noqa (VJP901)

Severity: warning; enabled by default (reported by the engine, not a rule). Fix: none.

## What it does

Reports a `# noqa` directive that names a VJP code no rule has, that suppresses nothing on its
line (an unused directive, once the code it names is enabled), or that lacks its colon
(`# noqa VJP101`, which suppresses nothing). A directive is read from the line's text, as flake8
reads it, so one quoted in a string counts too; `per-file-ignores = { "docs/*" = ["VJP901"] }`
turns the report off where code quotes directives.

## Why is this bad?

A misspelt directive silences nothing, and an unused one would silence the next real finding on
that line without anyone noticing.

## Example

```python
return (None, g * w)  # noqa VJP602
```

## Use instead

```python
return (None, g * w)  # noqa: VJP602
```
""",
}


def rule_pages() -> Dict[str, str]:
    """Every page of the rule documentation, file name -> Markdown: a page per rule and per engine
    code, a redirect page per merged code and README.md, the table of them all. The pages shipped in
    vjplint/docs/rules (`write_docs`) and the docs site's rule pages (docs/hooks.py) are these."""
    pages: Dict[str, str] = {}
    index = ["# vjplint rules\n", "| code | name | severity | default | fix |", "|---|---|---|---|---|"]
    for code, rule in all_rules().items():
        pages[f"{code}.md"] = render_markdown(rule)
        index.append(f"| [{code}]({code}.md) | {rule.NAME} | {rule.SEVERITY.value} | "
                     f"{_default(rule)} | {rule.FIX or ''} |")
    for code, (name, severity) in sorted(ENGINE_CODES.items()):
        pages[f"{code}.md"] = ENGINE_PAGES[code]
        index.append(f"| [{code}]({code}.md) | {name} | {severity} | on | |")
    for old in sorted(REDIRECTS):  # a merged code's page points to its new code (a link stays valid)
        new = redirected(old)
        pages[f"{old}.md"] = (f"# {old}\n\n{old} has been merged into [{new}]({new}.md); `{old}` in "
                              f"select, ignore, per-file-ignores and `# noqa` means {new}.\n")
        index.append(f"| {old} | merged into [{new}]({new}.md) | | | |")
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def write_docs(directory: str = "vjplint/docs/rules") -> None:
    """Regenerate the rule pages (shipped inside the package: the default target of rule links)."""
    from pathlib import Path

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rule_pages().items():
        (out / name).write_text(text, encoding="utf-8")


def _default(rule: Type[Rule]) -> str:
    """The table's default column: `partly` for an off rule whose failing cases are on."""
    return "on" if rule.DEFAULT_ENABLED else ("partly" if rule.DEFAULT_REPORTS else "off")


README_START = "<!-- rules:start (generated by `python -m vjplint.rules.docs`) -->"
README_END = "<!-- rules:end -->"


def readme_table() -> str:
    rows = ["| code | name | severity | fix | default |", "|---|---|---|---|---|"]
    for code, rule in all_rules().items():
        rows.append(f"| [{code}](vjplint/docs/rules/{code}.md) | {rule.NAME} | {rule.SEVERITY.value} | {rule.FIX or ''} | "
                    f"{_default(rule)} |")
    return "\n".join(rows)


def update_readme(path: str = "README.md") -> None:
    from pathlib import Path

    readme = Path(path)
    text = readme.read_text(encoding="utf-8")
    start, end = text.index(README_START), text.index(README_END)
    readme.write_text(text[: start + len(README_START)] + "\n" + readme_table() + "\n" + text[end:], encoding="utf-8")


if __name__ == "__main__":
    write_docs()
    update_readme()
