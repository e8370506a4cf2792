"""`--output-format sarif|github|lsp` through the real CLI, and the rule documentation pages.

SARIF is validated against the official 2.1.0 schema shipped in tests/data/ (see its README).
GitHub lines are checked character for character, escaping included. LSP positions are 0-based
and counted in UTF-16 code units.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.conftest import ROOT, run_cli
from vjplint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from vjplint.output import OutputContext, get_formatter
from vjplint.output import github, lsp
from vjplint.syntax.positions import code_units

SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
# One error (VJP101, fixable), one warning (VJP102), one info (VJP107, off by default).
SAMPLES = {
    "error.py": """\
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
""",
    "warning.py": """\
import jax
import jax.numpy as jnp
from functools import partial


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def leaky(x, slope: jax.Array = 0.01):
    return jnp.where(x > 0, x, slope * x)


def leaky_fwd(x, slope=0.01):
    return leaky(x, slope), x


def leaky_bwd(slope, x, g):
    return (jnp.where(x > 0, g, slope * g),)


leaky.defvjp(leaky_fwd, leaky_bwd)
""",
    "info.py": """\
from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def gather(indices, x):
    return x[indices]


def gather_fwd(indices, x):
    return x[indices], x


def gather_bwd(indices, x, g):
    return (jax.numpy.zeros_like(x).at[indices].set(g),)


gather.defvjp(gather_fwd, gather_bwd)


def model(x):
    return gather([0, 2], x)
""",
}
BROKEN = "import jax\n\n@jax.custom_vjp\ndef f(x:\n    return x\n"
# U+1D706 (one code point, two UTF-16 units) before the reported names on their line.
ASTRAL = '''\
from functools import partial
import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def clip(\U0001d706o, x):
    return x


def clip_fwd(\U0001d706o, x):
    return x, None


def clip_bwd(\U0001d706o, _, g):
    return (jnp.clip(g, \U0001d706o, 1.0),)


clip.defvjp(clip_fwd, clip_bwd)
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text('[tool.vjplint]\nextend-select = ["VJP107"]\n', encoding="utf-8")
    for name, source in SAMPLES.items():
        (root / name).write_text(source, encoding="utf-8")
    (root / "broken.py").write_text(BROKEN, encoding="utf-8")
    (root / "astral.py").write_text(ASTRAL, encoding="utf-8")
    return root


def run(project: Path, fmt: str, *files: str) -> Any:
    proc = run_cli("--no-cache", "--output-format", fmt, *files, cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def reference(project: Path, *files: str) -> List[Dict[str, Any]]:
    return json.loads(run(project, "json", *files))


# -- SARIF -------------------------------------------------------------------------------------------
def test_sarif_is_valid_2_1_0_with_rule_metadata_and_fixes(project: Path) -> None:
    import jsonschema
    files = ("error.py", "warning.py", "info.py", "broken.py")
    log = json.loads(run(project, "sarif", *files))
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)

    assert log["version"] == "2.1.0"
    [run_] = log["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "vjplint"
    from vjplint.links import rule_url
    from vjplint.rules.registry import ENGINE_CODES, all_rules

    rules = driver["rules"]
    assert [r["id"] for r in rules] == [*all_rules(), *sorted(ENGINE_CODES)]
    for rule in rules:
        assert rule["helpUri"] == rule_url(rule["id"])
    vjp101 = next(r for r in rules if r["id"] == "VJP101")
    assert vjp101["name"] == "nondiff-array" and vjp101["defaultConfiguration"]["level"] == "error"
    assert "## Why is this bad?" in vjp101["help"]["markdown"]

    expected = reference(project, *files)
    results = run_["results"]
    assert [r["ruleId"] for r in results] == [d["code"] for d in expected]
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for result, d in zip(results, expected):
        assert rules[result["ruleIndex"]]["id"] == d["code"]
        assert result["level"] == levels[d["severity"]]
        assert result["message"]["text"] == d["message"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": d["filename"], "uriBaseId": "%SRCROOT%"}
        assert location["region"] == {"startLine": d["location"]["row"], "startColumn": d["location"]["column"],
                                      "endLine": d["end_location"]["row"], "endColumn": d["end_location"]["column"]}
        assert ("fixes" in result) == bool(d["fix"])
    assert {r["level"] for r in results} == {"error", "warning", "note"}
    assert run_["columnKind"] == "unicodeCodePoints"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"

    fixed = next(r for r, d in zip(results, expected) if d["fix"])
    [fix] = fixed["fixes"]
    edits = next(d for d in expected if d["fix"])["fix"]["edits"]
    replacements = fix["artifactChanges"][0]["replacements"]
    assert [r["insertedContent"]["text"] for r in replacements] == [e["content"] for e in edits]
    assert replacements[0]["deletedRegion"]["startLine"] == edits[0]["location"]["row"]


def test_sarif_for_a_clean_run_is_valid_and_empty(project: Path) -> None:
    import jsonschema
    (project / "clean.py").write_text("import jax\n", encoding="utf-8")
    proc = run_cli("--no-cache", "--output-format", "sarif", "clean.py", cwd=project)
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(log)
    assert log["runs"][0]["results"] == []


# -- GitHub ------------------------------------------------------------------------------------------
def test_github_annotations_through_the_cli(project: Path) -> None:
    files = ("error.py", "warning.py", "info.py", "broken.py")
    out = run(project, "github", *files)
    command = {"error": "error", "warning": "warning", "info": "notice"}
    expected = [
        f"::{command[d['severity']]} file={d['filename']},line={d['location']['row']},col={d['location']['column']},"
        f"endLine={d['end_location']['row']},endColumn={d['end_location']['column']},"
        f"title={d['code']} ({d['name']})::{github.escape_data(d['message'])}"
        for d in reference(project, *files)
    ]
    assert out.splitlines() == expected
    assert out.startswith("::error file=broken.py,line=4,col=")
    assert {line.split(" ", 1)[0] for line in out.splitlines()} == {"::error", "::warning", "::notice"}


@pytest.mark.unit
def test_github_escaping_is_exact() -> None:
    d = Diagnostic(code="VJP102", name="nondiff-maybe-array", message="50% sure: `a`\r\nsee, here",
                   severity=Severity.WARNING, filename="src/a,b:c%.py", location=Position(3, 5),
                   end_location=Position(4, 1))
    info = Diagnostic(code="VJP107", name="nondiff-unhashable", message="plain", severity=Severity.INFO,
                      filename="x.py", location=Position(1, 1), end_location=Position(1, 2))
    out = get_formatter("github")([d, info], OutputContext())
    assert out == (
        "::warning file=src/a%2Cb%3Ac%25.py,line=3,col=5,endLine=4,endColumn=1,"
        "title=VJP102 (nondiff-maybe-array)::50%25 sure: `a`%0D%0Asee, here\n"
        "::notice file=x.py,line=1,col=1,endLine=1,endColumn=2,title=VJP107 (nondiff-unhashable)::plain\n"
    )


# -- LSP ---------------------------------------------------------------------------------------------
def test_lsp_output_maps_file_uris_to_lsp_diagnostics(project: Path) -> None:
    out = json.loads(run(project, "lsp", "astral.py", "broken.py"))
    astral, broken = (project / "astral.py").resolve().as_uri(), (project / "broken.py").resolve().as_uri()
    assert list(out) == [astral, broken]
    [d] = out[astral]
    # `def clip(𝜆o, x):`: the name starts at code point 9 and spans 3 UTF-16 units.
    assert d["range"] == {"start": {"line": 6, "character": 9}, "end": {"line": 6, "character": 12}}
    assert d["code"] == "VJP101" and d["severity"] == 1 and d["source"] == "vjplint"
    assert d["codeDescription"]["href"].endswith("/docs/rules/VJP101.md")
    assert d["data"]["fix_applicability"] in ("safe", "unsafe")
    for edit in d["data"].get("fix", {}).get("edits", []):
        assert set(edit) == {"range", "newText"}
    [syntax] = out[broken]
    assert syntax["code"] == "VJP900" and syntax["range"]["start"]["line"] == 3


def test_lsp_rows_ignore_characters_that_are_not_python_line_breaks(tmp_path: Path) -> None:
    """A form feed (common in older modules) or U+2028 must not shift rows, noqa lines or quotes."""
    source = SAMPLES["error.py"].replace("import jax\n", "import jax\n\x0c\n# \u2028 \x1c\n", 1)
    source = source.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x):  # noqa: VJP101")
    source += "\n\n@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef late(w, x):\n    return jnp.dot(w, x)\n"
    source += "\n\ndef late_fwd(w, x):\n    return jnp.dot(w, x), None\n\n\ndef late_bwd(w, _, g):\n"
    source += "    return (jnp.dot(w, g),)\n\n\nlate.defvjp(late_fwd, late_bwd)\n"
    (tmp_path / "ff.py").write_text(source, encoding="utf-8")
    proc = run_cli("--no-cache", "--output-format", "lsp", "ff.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    [diagnostics] = json.loads(proc.stdout).values()
    row = source.split("\n").index("def late(w, x):")
    assert [(d["code"], d["range"]["start"]) for d in diagnostics] == [("VJP101", {"line": row, "character": 9})]
    assert "`jnp.dot(w, x)`" in diagnostics[0]["message"] or "jnp.dot(w" in diagnostics[0]["message"]


@pytest.mark.unit
@pytest.mark.parametrize("encoding, expected", [("utf-16", 3), ("utf-8", 5), ("utf-32", 2)])
def test_lsp_positions_per_encoding(encoding: str, expected: int) -> None:
    lines = ["\U0001d706o = 1"]
    assert lsp.to_lsp_position(lines, Position(1, 3), encoding) == {"line": 0, "character": expected}
    assert lsp.from_lsp_position(lines, 0, expected, encoding) == Position(1, 3)
    # Past the end of the line clamps to its end; lines beyond the text are kept as given.
    assert lsp.to_lsp_position(lines, Position(1, 40), encoding)["character"] == code_units(lines[0], encoding)
    assert lsp.to_lsp_position(lines, Position(2, 1), encoding) == {"line": 1, "character": 0}


@pytest.mark.unit
def test_lsp_diagnostic_carries_the_fix_as_text_edits() -> None:
    fix = Fix(Applicability.SAFE, "Write `(0,)`", (Edit("(0,)", Position(1, 7), Position(1, 8)),))
    d = Diagnostic(code="VJP103", name="nondiff-argnums-invalid", message="m", severity=Severity.ERROR,
                   filename="a.py", location=Position(1, 7), end_location=Position(1, 8),
                   fix=fix, noqa_row=1)
    out = lsp.diagnostic_to_lsp(d, ["é = f(0)"])
    assert out["data"]["fix"] == {"applicability": "safe", "message": "Write `(0,)`", "edits": [
        {"range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 7}}, "newText": "(0,)"}]}
    assert out["data"]["noqa_row"] == 1


# -- rule documentation ------------------------------------------------------------------------------
@pytest.mark.unit
def test_rule_docs_are_up_to_date(tmp_path: Path) -> None:
    """vjplint/docs/rules/ is generated from the rules: regenerate with `python -m vjplint.rules.docs`."""
    from vjplint.rules.docs import write_docs

    write_docs(str(tmp_path))
    generated = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    committed = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "vjplint" / "docs" / "rules").iterdir()}
    stale = sorted(name for name in generated.keys() | committed.keys() if generated.get(name) != committed.get(name))
    assert not stale, f"docs/rules is stale ({', '.join(stale)}): run `python -m vjplint.rules.docs`"


@pytest.mark.unit
def test_every_rule_url_points_at_its_page() -> None:
    from vjplint.links import rule_url
    from vjplint.rules.registry import all_rules

    for code in all_rules():
        url = rule_url(code)
        assert url.endswith(f"/docs/rules/{code}.md")
        assert (ROOT / "vjplint" / "docs" / "rules" / f"{code}.md").is_file()
        assert url == (ROOT / "vjplint" / "docs" / "rules" / f"{code}.md").as_uri()  # the shipped page


def test_every_output_format_has_its_formatter_imported_alone() -> None:
    """`get_formatter` imports only the module of the format asked for (junit's XML costs 10 ms
    at every run otherwise); every format the CLI accepts has one, and each renders."""
    import subprocess
    import sys

    from vjplint.settings.options import OUTPUT_FORMATS

    for name in OUTPUT_FORMATS:
        assert callable(get_formatter(name))
        assert isinstance(get_formatter(name)([], OutputContext()), str)
    probe = ("import sys; from vjplint.output import get_formatter; get_formatter('text'); "
             "print(sorted(m for m in sys.modules if m.startswith('vjplint.output.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['vjplint.output.text']"
