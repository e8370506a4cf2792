"""Notebook findings in the CI and editor formats (`github`, `gitlab`, `junit`, `rdjson`, `lsp`)
through the real CLI, on a notebook written by nbformat: each says which cell, its rows count in
that cell, its columns are converted on the cell's line (bytes for rdjson, UTF-16 for lsp), and no
format offers the edits (they are on the notebook's joined Python text, not the file's lines). The
schemas and parsers are those of tests/cli/test_ci_formats.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
import pytest
from junitparser import JUnitXml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data"
CLIP = ("@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef clip(lo, x):\n    return x\n\n\ndef clip_fwd(lo, x):\n"
        "    return x, None\n\n\ndef clip_bwd(lo, _, g):\n    return (jnp.clip(g, lo, None),)\n\n\n"
        "clip.defvjp(clip_fwd, clip_bwd)")
# Cell 4, row 2: an emoji (1 code point, 4 UTF-8 bytes, 2 UTF-16 units) before the finding at column 45.
CALL = '%matplotlib inline\nlabel = "\N{GRINNING FACE}"; y = jax.jit(lambda lo, x: clip(lo, x))(0.5, 1.0)'


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    cells = [new_markdown_cell("# Clip"), new_code_cell("from functools import partial\n\nimport jax\nimport jax.numpy as jnp"),
             new_code_cell(CLIP), new_code_cell(CALL)]
    nbformat.write(new_notebook(cells=cells), tmp_path / "nb.ipynb")
    return tmp_path


def _run(project: Path, fmt: str) -> str:
    proc = run_cli("--no-cache", "--output-format", fmt, "nb.ipynb", cwd=project)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    return proc.stdout


def _schema(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def test_github_titles_name_the_cell(project: Path) -> None:
    lines = _run(project, "github").splitlines()
    assert [line.split("::")[1] for line in lines] == [
        "error file=nb.ipynb,line=2,col=10,endLine=2,endColumn=12,title=VJP101 (nondiff-array) in cell 3",
        "error file=nb.ipynb,line=2,col=45,endLine=2,endColumn=47,title=VJP104 (nondiff-traced-at-call) in cell 4"]


def test_gitlab_issues_carry_the_cell_and_keep_the_schema(project: Path) -> None:
    report = json.loads(_run(project, "gitlab"))
    jsonschema.validate(report, _schema("gitlab-codequality-schema.json"))
    assert [(i["check_name"], i["location"]["lines"]["begin"], i["cell"]) for i in report] == [
        ("vjplint:VJP101", 2, 3), ("vjplint:VJP104", 2, 4)]
    assert report[0]["description"].endswith("return None for it from bwd (cell 3, line 2)")


def test_gitlab_fingerprints_differ_for_the_same_finding_in_two_cells(tmp_path: Path) -> None:
    call = "y = jax.jit(lambda lo, x: clip(lo, x))(0.5, 1.0)"
    cells = [new_code_cell("from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n" + CLIP),
             new_code_cell(call), new_code_cell(call)]
    nbformat.write(new_notebook(cells=cells), tmp_path / "nb.ipynb")
    report = json.loads(_run(tmp_path, "gitlab"))
    calls = [i for i in report if i["check_name"] == "vjplint:VJP104"]
    assert [i["cell"] for i in calls] == [2, 3] and calls[0]["fingerprint"] != calls[1]["fingerprint"]


def test_junit_cases_name_the_cell(project: Path) -> None:
    cases = [c for s in JUnitXml.fromstring(_run(project, "junit")) for c in s]
    assert [(c.name, c.classname) for c in cases] == [
        ("VJP101 (nondiff-array) at cell 3:2:10", "nb.ipynb"), ("VJP104 (nondiff-traced-at-call) at cell 4:2:45", "nb.ipynb")]
    assert cases[1].result[0].text.startswith("nb.ipynb:cell 4:2:45: VJP104 `clip` receives a traced value")


def test_rdjson_counts_bytes_on_the_cells_line_and_suggests_no_edit(project: Path) -> None:
    report = json.loads(_run(project, "rdjson"))
    jsonschema.validate(report, _schema("rdjson-schema.json"))
    found = report["diagnostics"]
    assert [(d["code"]["value"], d["location"]["range"]["start"], d["message"][:8]) for d in found] == [
        ("VJP101", {"line": 2, "column": 10}, "cell 3: "),
        ("VJP104", {"line": 2, "column": 48}, "cell 4: ")]  # the emoji is 4 bytes
    assert all("suggestions" not in d for d in found)  # VJP101's fix edits the joined text


def test_lsp_counts_utf16_on_the_cells_line_and_carries_the_cell(project: Path) -> None:
    [items] = json.loads(_run(project, "lsp")).values()
    assert [(i["code"], i["range"]["start"], i["data"]["cell"]) for i in items] == [
        ("VJP101", {"line": 1, "character": 9}, 3), ("VJP104", {"line": 1, "character": 45}, 4)]
    assert items[0]["data"]["fix_applicability"] == "safe" and "fix" not in items[0]["data"]


def test_diff_names_the_cell_of_each_hunk_with_rows_in_the_cell(tmp_path: Path) -> None:
    """ruff's notebook diff: one diff per changed cell, headed `nb.ipynb:cell N`, rows counted in
    the cell and its magics as the notebook shows them; nothing is written."""
    call = "%time y = clip(0.5, 1.0)\nz = 2"
    cells = [new_markdown_cell("# Clip"), new_code_cell("from functools import partial\n\nimport jax\nimport jax.numpy as jnp"),
             new_code_cell(CLIP), new_code_cell(call)]
    nbformat.write(new_notebook(cells=cells), tmp_path / "nb.ipynb")
    before = (tmp_path / "nb.ipynb").read_bytes()
    proc = run_cli("--no-cache", "--diff", "nb.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (1, "Would fix 1 problem.\n")
    assert proc.stdout == (
        "--- nb.ipynb:cell 2\n+++ nb.ipynb:cell 2\n@@ -1,4 +1,2 @@\n"
        "-from functools import partial\n-\n import jax\n import jax.numpy as jnp\n"
        "--- nb.ipynb:cell 3\n+++ nb.ipynb:cell 3\n@@ -1,14 +1,14 @@\n"
        "-@partial(jax.custom_vjp, nondiff_argnums=(0,))\n+@jax.custom_vjp\n def clip(lo, x):\n     return x\n \n \n"
        " def clip_fwd(lo, x):\n-    return x, None\n+    return x, lo\n \n \n"
        "-def clip_bwd(lo, _, g):\n-    return (jnp.clip(g, lo, None),)\n+def clip_bwd(lo, g):\n"
        "+    return (None, jnp.clip(g, lo, None))\n \n \n clip.defvjp(clip_fwd, clip_bwd)\n"), proc.stdout
    assert (tmp_path / "nb.ipynb").read_bytes() == before
