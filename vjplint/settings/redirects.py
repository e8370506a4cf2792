"""Codes that were merged into another (ruff's redirect table): the old code keeps working wherever
a user writes it, in `select`, `ignore`, `extend-select` and `per-file-ignores` (pyproject.toml,
the command line, the editor's settings), in `# noqa: OLD`, and in `vjplint rule OLD`, which says
"OLD has been merged into NEW" and shows NEW's page. Only whole codes are redirected: a prefix
selector (`VJP3`) keeps matching by number.

Codes merged so far: none. Every code of vjplint 0.x still names its own rule; a merge adds one
line here (the old code, the code it now reports as) and removes the old rule module, and README's
"Codes that moved" lists it."""

from __future__ import annotations

from typing import Dict, Iterable, Tuple

# old code -> the code it was merged into
REDIRECTS: Dict[str, str] = {}


def redirected(code: str) -> str:
    """The code `code` reports as now: itself, or where its merges lead (a chain is followed)."""
    seen = set()
    while code in REDIRECTS and code not in seen:
        seen.add(code)
        code = REDIRECTS[code]
    return code


def redirect_all(codes: Iterable[str]) -> Tuple[str, ...]:
    """Selectors with every merged code replaced by its new code, in order."""
    return tuple(redirected(code) for code in codes)
