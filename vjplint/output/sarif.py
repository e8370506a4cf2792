"""SARIF 2.1.0, as GitHub code scanning reads it: rule metadata, results and fixes.

Columns are vjplint's (1-based code points, the end exclusive), declared with `columnKind`.
Relative paths are given against `%SRCROOT%`, the directory vjplint ran in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple
from urllib.parse import quote

from vjplint import __version__
from vjplint.diagnostics import Diagnostic, Severity
from vjplint.links import DEFAULT_DOCS_URL, docs_home, rule_url
from vjplint.output import OutputContext
from vjplint.rules.docs import render_rule, rule_doc
from vjplint.rules.registry import ENGINE_CODES, all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _section(doc: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\s*\n(.*?)(?=^## |\Z)", doc, re.M | re.S)
    return " ".join(match.group(1).split()) if match else ""


def rule_descriptors(docs_url: str = DEFAULT_DOCS_URL) -> List[Dict[str, Any]]:
    """Every rule the tool knows (so ruleIndex is stable), engine codes included."""
    out = []
    for code, rule in all_rules().items():
        doc = rule_doc(rule)
        what = _section(doc, "What it does") or rule.NAME
        out.append({
            "id": code,
            "name": rule.NAME,
            "shortDescription": {"text": what.split(". ")[0].rstrip(".") + "."},
            "fullDescription": {"text": what},
            "help": {"text": doc, "markdown": render_rule(rule)},
            "helpUri": rule_url(code, docs_url),
            "defaultConfiguration": {"level": LEVEL[rule.SEVERITY], "enabled": rule.DEFAULT_ENABLED},
            "properties": {"fix": rule.FIX, "tags": ["jax", "custom-derivatives"]},
        })
    for code, (name, severity) in sorted(ENGINE_CODES.items()):
        out.append({
            "id": code,
            "name": name,
            "shortDescription": {"text": name.replace("-", " ").capitalize() + "."},
            "helpUri": rule_url(code, docs_url),
            "defaultConfiguration": {"level": LEVEL[Severity(severity)], "enabled": True},
        })
    return out


def _uri(filename: str) -> Tuple[str, Dict[str, str]]:
    path = Path(filename)
    if path.is_absolute():
        return path.as_uri(), {}
    return quote(path.as_posix()), {"uriBaseId": "%SRCROOT%"}


def _region(start: Any, end: Any) -> Dict[str, int]:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _result(d: Diagnostic, index: Dict[str, int]) -> Dict[str, Any]:
    uri, base = _uri(d.filename)
    location = {"uri": uri, **base}
    result: Dict[str, Any] = {
        "ruleId": d.code,
        "level": LEVEL[d.severity],
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {"artifactLocation": location,
                                            "region": _region(d.location, d.end_location)}}],
    }
    if d.cell is not None:  # a notebook: rows count in this 1-based cell (vjplint.syntax.notebook)
        result["locations"][0]["physicalLocation"]["region"]["properties"] = {"cell": d.cell}
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.fix is not None and d.fix.edits and d.cell is None:  # a notebook's edits are not the file's lines
        unsafe = d.fix.applicability.value == "unsafe"
        result["fixes"] = [{
            "description": {"text": d.fix.message + (" (unsafe)" if unsafe else "")},
            "artifactChanges": [{
                "artifactLocation": location,
                "replacements": [{"deletedRegion": _region(e.location, e.end_location),
                                  "insertedContent": {"text": e.content}} for e in d.fix.edits],
            }],
            "properties": {"applicability": d.fix.applicability.value},
        }]
    return result


def to_sarif(diagnostics: List[Diagnostic], docs_url: str = DEFAULT_DOCS_URL) -> Dict[str, Any]:
    rules = rule_descriptors(docs_url)
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "vjplint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": docs_home(docs_url), "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [_result(d, index) for d in diagnostics],
        }],
    }


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    return json.dumps(to_sarif(diagnostics, ctx.docs_url), indent=2, ensure_ascii=False) + "\n"
