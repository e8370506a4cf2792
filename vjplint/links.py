"""Where a rule's documentation lives: the one setting behind every rule link vjplint writes (JSON
`url`, SARIF `helpUri` and `informationUri`, rdjson's `code.url` and `source.url`, GitLab's body,
JUnit's failure text, LSP `codeDescription.href`, `vjplint rule --output-format json`).

By default the links point at the rule pages that ship inside the package (vjplint/docs/rules,
generated from the rules by `python -m vjplint.rules.docs`), so they resolve wherever vjplint is
installed; there is no public address yet. `docs-url` in [tool.vjplint] points them elsewhere (the
docs site built with `mkdocs build`, served by a team, or any copy of the pages): a base URL that
CODE.md is appended to, or one with a `{code}` placeholder (`https://example.org/rules/{code}/`).
The environment variable VJPLINT_DOCS_URL overrides it for one machine or CI job, as a command-line
option would (`vjplint rule`, which reads no configuration, follows only the variable).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

DOCS_DIR = Path(os.path.dirname(os.path.abspath(__file__))) / "docs" / "rules"
DEFAULT_DOCS_URL = DOCS_DIR.as_uri() + "/"
RULES_INDEX = "README.md"  # the shipped pages' table of every rule
ENV = "VJPLINT_DOCS_URL"


def docs_url(configured: Optional[str] = None) -> str:
    """The base rule links use: $VJPLINT_DOCS_URL, else the configured `docs-url`, else the shipped pages."""
    return os.environ.get(ENV) or configured or DEFAULT_DOCS_URL


def rule_url(code: str, base: str = DEFAULT_DOCS_URL) -> str:
    """`base` + CODE.md, or `base` with `{code}` replaced when it has that placeholder."""
    return base.replace("{code}", code) if "{code}" in base else f"{base}{code}.md"


def docs_home(base: str = DEFAULT_DOCS_URL) -> str:
    """The page about every rule, for a tool's home link (SARIF `informationUri`, rdjson
    `source.url`): the shipped table, or where `base` keeps its pages (the part of a `{code}`
    template before the last `/` that precedes the placeholder)."""
    if base == DEFAULT_DOCS_URL:
        return DEFAULT_DOCS_URL + RULES_INDEX
    if "{code}" in base:
        return base[:base.index("{code}")].rsplit("/", 1)[0] + "/"
    return base
