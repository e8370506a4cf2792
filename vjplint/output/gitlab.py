"""GitLab Code Quality (`artifacts:reports:codequality`): a JSON array of issues.

GitLab reads `description`, `check_name`, `fingerprint`, `severity` (info, minor, major, critical,
blocker) and `location.path` (relative to the repository, without `./`) with `location.lines.begin`.
It shows only the first issue of a fingerprint, so each finding gets its own: a hash of the path,
the code, the message and how many identical findings come before it in the file; not the line,
so a finding keeps its fingerprint when code above it moves (GitLab then sees no new issue).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Any, Dict, List, Tuple

from vjplint.diagnostics import Diagnostic, Severity
from vjplint.output import OutputContext

SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def report_path(filename: str) -> str:
    """A repository-relative POSIX path (CI runs at the repository root); absolute paths outside
    the working directory stay absolute."""
    path = filename
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        path = path if relative.startswith("..") else relative
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def issue(d: Diagnostic, occurrence: int, ctx: OutputContext) -> Dict[str, Any]:
    path = report_path(d.filename)
    cell = f"cell {d.cell}" if d.cell is not None else ""  # a notebook: the lines count in that cell
    key = "\0".join((path, d.code, d.message, str(occurrence)) + ((cell,) if cell else ()))
    return {
        "type": "issue",
        "description": f"{d.code} {d.message}" + (f" ({cell}, line {d.location.row})" if cell else ""),
        "check_name": f"vjplint:{d.code}",
        "fingerprint": hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32],
        "severity": SEVERITY[d.severity],
        "categories": ["Bug Risk"],
        "location": {"path": path, "lines": {"begin": d.location.row, "end": d.end_location.row}},
        "content": {"body": f"{d.name}: {ctx.url(d.code)}"},
        **({"cell": d.cell} if d.cell is not None else {}),  # GitLab ignores keys it does not know
    }


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    seen: Counter = Counter()
    issues = []
    for d in diagnostics:
        key: Tuple[str, str, str, int] = (d.filename, d.code, d.message, d.cell or 0)
        issues.append(issue(d, seen[key], ctx))
        seen[key] += 1
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
