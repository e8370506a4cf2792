"""Where a rule's documentation lives: the link in JSON `url`, SARIF `helpUri` and LSP
`codeDescription.href`."""

from __future__ import annotations

DEFAULT_DOCS_URL = "https://github.com/vjplint/vjplint/blob/main/docs/rules/"


def rule_url(code: str, base: str = DEFAULT_DOCS_URL) -> str:
    """`base` + CODE.md, or `base` with `{code}` replaced when it has that placeholder."""
    return base.replace("{code}", code) if "{code}" in base else f"{base}{code}.md"
