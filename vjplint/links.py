"""Where a rule's documentation lives: the link in JSON `url`, SARIF `helpUri` and LSP
`codeDescription.href`.

By default the links point at the rule pages that ship inside the package (vjplint/docs/rules,
generated from the rules by `python -m vjplint.rules.docs`), so they resolve wherever vjplint is
installed. `docs-url` in [tool.vjplint] points them elsewhere (a team's own copy of the docs, a
repository at a commit): a base URL that CODE.md is appended to, or one with a `{code}` placeholder.
"""

from __future__ import annotations

import os
from pathlib import Path

DOCS_DIR = Path(os.path.dirname(os.path.abspath(__file__))) / "docs" / "rules"
DEFAULT_DOCS_URL = DOCS_DIR.as_uri() + "/"


def rule_url(code: str, base: str = DEFAULT_DOCS_URL) -> str:
    """`base` + CODE.md, or `base` with `{code}` replaced when it has that placeholder."""
    return base.replace("{code}", code) if "{code}" in base else f"{base}{code}.md"
