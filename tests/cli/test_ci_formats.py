"""`--output-format gitlab|junit|rdjson` through the real CLI, each checked by its consumer's rules:
GitLab Code Quality and reviewdog's rdjson against JSON schemas written from their documentation
(tests/data/gitlab-codequality-schema.json, tests/data/rdjson-schema.json), JUnit XML parsed by
junitparser (what CI test-report tools use)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, List

import jsonschema
import pytest
from junitparser import Failure, JUnitXml

from tests.conftest import ROOT, run_cli
from vjplint.diagnostics import Edit, Position
from vjplint.fixes.edits import apply_edits

DATA = ROOT / "tests" / "data"
# VJP101 twice on one line (fixable), VJP104 twice at the call site; a non-ASCII name before the
# findings so that byte columns (rdjson) differ from code-point columns.
SOURCE = textwrap.dedent('''\
    from functools import partial

    import jax
    import jax.numpy as jnp


    @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x


    def clip_gradient_fwd(lo, hi, x):
        return x, None


    def clip_gradient_bwd(lo, hi, _, g):
        return (jnp.clip(g, lo, hi),)


    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


    def trigger():
        été = 2; return jax.jit(lambda lo, hi, x: clip_gradient(lo, hi, x) * été)(-0.5, 0.5, 1.0)
    ''')


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "clip.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "pkg" / "clean.py").write_text("import jax\n")
    return tmp_path


def _run(project: Path, fmt: str, *paths: str) -> str:
    proc = run_cli("--no-cache", "--output-format", fmt, *(paths or ("pkg",)), cwd=project)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def _schema(name: str) -> Any:
    schema = json.loads((DATA / name).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return schema


def test_gitlab_code_quality_matches_the_documented_schema(project: Path) -> None:
    report = json.loads(_run(project, "gitlab"))
    jsonschema.validate(report, _schema("gitlab-codequality-schema.json"))
    assert [(i["check_name"], i["severity"], i["location"]["path"], i["location"]["lines"]["begin"])
            for i in report] == [("vjplint:VJP101", "major", "pkg/clip.py", 8)] * 2 + \
                                [("vjplint:VJP104", "major", "pkg/clip.py", 24)] * 2
    assert report[0]["description"].startswith("VJP101 `lo` (position 0) is in nondiff_argnums")
    assert len({i["fingerprint"] for i in report}) == 4  # GitLab shows one issue per fingerprint


def test_gitlab_fingerprints_survive_moved_lines_and_paths_are_relative(project: Path) -> None:
    before = json.loads(_run(project, "gitlab"))
    clip = project / "pkg" / "clip.py"
    clip.write_text("# a new first line\n" + SOURCE, encoding="utf-8")
    after = json.loads(_run(project, "gitlab", "./pkg/", str(clip.parent / "clean.py")))
    assert [i["fingerprint"] for i in after] == [i["fingerprint"] for i in before]
    assert [i["location"]["lines"]["begin"] for i in after] == [9, 9, 25, 25]
    assert {i["location"]["path"] for i in after} == {"pkg/clip.py"}
    assert json.loads(_run(project, "gitlab", "pkg/clean.py")) == []


def test_gitlab_rejects_what_gitlab_would_not_read() -> None:
    """The schema can fail: a bad severity, a ./ path or a missing line number are refused."""
    schema = _schema("gitlab-codequality-schema.json")
    good = {"description": "d", "check_name": "c", "fingerprint": "f", "severity": "minor",
            "location": {"path": "a.py", "lines": {"begin": 1}}}
    jsonschema.validate([good], schema)
    for bad in ({**good, "severity": "error"}, {**good, "location": {"path": "./a.py", "lines": {"begin": 1}}},
                {**good, "location": {"path": "a.py"}}, {k: v for k, v in good.items() if k != "fingerprint"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([bad], schema)


def test_junit_is_read_by_junitparser(project: Path) -> None:
    text = _run(project, "junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    xml = JUnitXml.fromstring(text)
    suites = list(xml)
    assert [(s.name, s.tests, s.failures, s.errors) for s in suites] == [("pkg/clip.py", 4, 4, 0)]
    cases = list(suites[0])
    assert [c.name for c in cases] == ["VJP101 (nondiff-array) at 8:19", "VJP101 (nondiff-array) at 8:23",
                                       "VJP104 (nondiff-traced-at-call) at 24:61",
                                       "VJP104 (nondiff-traced-at-call) at 24:65"]
    assert {c.classname for c in cases} == {"pkg/clip.py"}
    results: List[Any] = [r for c in cases for r in c.result]
    assert all(isinstance(r, Failure) for r in results) and [r.type for r in results][:1] == ["VJP101"]
    assert results[0].message.startswith("`lo` (position 0) is in nondiff_argnums")
    assert results[0].text.startswith("pkg/clip.py:8:19: VJP101 `lo`")


def test_junit_for_a_clean_run_and_text_xml_cannot_hold(project: Path) -> None:
    xml = JUnitXml.fromstring(_run(project, "junit", "pkg/clean.py"))
    cases = [c for s in xml for c in s]
    assert [(c.name, c.is_passed) for c in cases] == [("All checks passed", True)]
    # a control character in a quoted excerpt would make the XML unreadable: it is replaced
    from vjplint.diagnostics import Diagnostic, Severity
    from vjplint.output import OutputContext, get_formatter

    d = Diagnostic("VJP101", "nondiff-array", "bad \x01 byte & <tag>", Severity.ERROR, "a.py",
                   Position(1, 1), Position(1, 2), noqa_row=1)
    parsed = JUnitXml.fromstring(get_formatter("junit")([d], OutputContext()))
    failure = [r for s in parsed for c in s for r in c.result][0]
    assert failure.message == "bad \ufffd byte & <tag>"


def test_rdjson_matches_reviewdogs_schema_with_byte_columns_and_suggestions(project: Path) -> None:
    report = json.loads(_run(project, "rdjson"))
    jsonschema.validate(report, _schema("rdjson-schema.json"))
    assert report["source"]["name"] == "vjplint"
    found = report["diagnostics"]
    assert [(d["code"]["value"], d["severity"], d["location"]["path"], d["location"]["range"]["start"])
            for d in found] == [
        ("VJP101", "ERROR", "pkg/clip.py", {"line": 8, "column": 19}),
        ("VJP101", "ERROR", "pkg/clip.py", {"line": 8, "column": 23}),
        # `été` is 3 code points, 5 bytes, before the call: reviewdog counts bytes
        ("VJP104", "ERROR", "pkg/clip.py", {"line": 24, "column": 63}),
        ("VJP104", "ERROR", "pkg/clip.py", {"line": 24, "column": 67}),
    ]
    assert found[0]["location"]["range"]["end"] == {"line": 8, "column": 21}
    assert "suggestions" not in found[2]
    # the suggestions are the fix's edits: applied, they give what --fix writes
    edits = [Edit(s["text"], Position(s["range"]["start"]["line"], s["range"]["start"]["column"]),
                  Position(s["range"]["end"]["line"], s["range"]["end"]["column"]))
             for s in found[0]["suggestions"]]
    fixed = project / "fixed"
    fixed.mkdir()
    (fixed / "clip.py").write_text(SOURCE, encoding="utf-8")
    assert run_cli("--no-cache", "--fix", "-q", "fixed/clip.py", cwd=project).returncode == 0  # VJP104 goes too
    # the edits do not touch the line with non-ASCII text, so byte and code-point columns agree there
    assert all(e.location.row < 24 and e.end_location.row <= 24 for e in edits)
    assert apply_edits(SOURCE, edits) == (fixed / "clip.py").read_text(encoding="utf-8")


def test_rdjson_schema_rejects_what_reviewdog_would_not_parse() -> None:
    schema = _schema("rdjson-schema.json")
    good = {"diagnostics": [{"message": "m", "location": {"path": "a.py", "range": {"start": {"line": 1}}}}]}
    jsonschema.validate(good, schema)
    for bad in ({"diagnostics": [{"message": "m", "location": {"path": "a.py", "range": {"end": {"line": 1}}}}]},
                {"diagnostics": [{"message": "m", "location": {"path": "a.py"}, "severity": "FATAL"}]},
                {"diagnostics": [{"message": "m", "location": {"path": "a.py"}, "fix": []}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_new_formats_are_listed_in_the_help() -> None:
    proc = run_cli("--help")
    assert "{text,concise,json,sarif,github,gitlab,junit,rdjson,lsp}" in proc.stdout


def test_rule_links_follow_docs_url(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.vjplint]\ndocs-url = "https://example.org/vjplint/{code}.html"\n')
    rdjson = json.loads(_run(project, "rdjson"))["diagnostics"][0]
    assert rdjson["code"]["url"] == "https://example.org/vjplint/VJP101.html"
    gitlab = json.loads(_run(project, "gitlab"))[0]
    assert gitlab["content"]["body"] == "nondiff-array: https://example.org/vjplint/VJP101.html"
    junit = [r for s in JUnitXml.fromstring(_run(project, "junit")) for c in s for r in c.result][0]
    assert junit.text.endswith("\nhttps://example.org/vjplint/VJP101.html")
