"""The evaluation in eval/ (CLI layer): the scorer runs the real CLI over the cases and prints its
summary; every case is well formed and labelled by the oracle in eval/labels.json. The oracle itself
(which runs every case on JAX, minutes) is not run here: `python eval/oracle.py` refreshes the labels.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

EVAL = ROOT / "eval"
sys.path.insert(0, str(EVAL))
from oracle import case_files, read_meta  # noqa: E402
from score import SPAN_MARK  # noqa: E402
# Layer cli: runs the real CLI in subprocesses (never JAX: labels are read, not made).

SUMMARY = re.compile(r"^eval: recall (\d+)/(\d+) \((\d\.\d\d|n/a)\), FP (\d+)/(\d+) \((\d\.\d\d|n/a)\)$")
LABELS = json.loads((EVAL / "labels.json").read_text(encoding="utf-8"))
FAMILIES = {"nondiff-array", "closure", "structure", "registration", "method", "forward-mode", "migration",
            "silent-wrong", "nonlinear-jvp", "static-in-diff", "jvp-primal", "composition"}


def run_score(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EVAL / "score.py"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def scored() -> dict:
    proc = run_score("--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_case_is_labelled_and_well_formed() -> None:
    ids = set()
    for path in case_files():
        meta = read_meta(path)
        rel = path.relative_to(EVAL / "cases").with_suffix("").as_posix()
        assert meta["id"] == rel, path
        assert meta["family"] in FAMILIES and rel.split("/")[0] == meta["family"], path
        assert meta["expect"] in ("hazard", "ok")
        assert re.fullmatch(r"[0-9a-f]{40}", meta["written_at_commit"]), path
        assert meta["url"].startswith("https://"), path
        assert meta["url"] in path.read_text(encoding="utf-8").split('"""')[1], f"{path}: docstring must cite the source"
        assert meta["id"] in LABELS["cases"], f"{meta['id']} has no label: run python eval/oracle.py"
        assert LABELS["cases"][meta["id"]]["label"] in ("hazard", "ok", "no-op")
        if LABELS["cases"][meta["id"]]["label"] == "no-op":  # only a case that claims it, checked both ways
            assert meta.get("claim") == "no-op", path
            assert LABELS["cases"][meta["id"]]["without_span"] == {"checks_ok": True, "same_grad_jaxpr": True}
        if LABELS["cases"][meta["id"]]["label"] == "hazard":
            assert SPAN_MARK in path.read_text(encoding="utf-8"), f"{path}: a hazard needs a marked span"
        ids.add(meta["id"])
    assert ids == set(LABELS["cases"]), "labels.json lists cases that no longer exist"
    assert LABELS["jax_version"]


def test_size_of_the_evaluation() -> None:
    labels = [c["label"] for c in LABELS["cases"].values()]
    assert labels.count("hazard") >= 30 and labels.count("ok") >= 15


def test_scorer_prints_the_summary_line() -> None:
    proc = run_score()
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    m = SUMMARY.match(last)
    assert m, last
    hazards = sum(c["label"] == "hazard" for c in LABELS["cases"].values())
    lookalikes = sum(c["label"] == "ok" for c in LABELS["cases"].values())
    assert (int(m[2]), int(m[5])) == (hazards, lookalikes)


def test_scorer_json_matches_the_cases(scored: dict) -> None:
    overall = scored["families"]["overall"]
    assert overall["hazards"] == sum(r["label"] == "hazard" for r in scored["cases"])
    assert overall["found"] == sum(bool(r["found"]) for r in scored["cases"])
    assert scored["unlabelled"] == []
    assert scored["summary"] == run_score().stdout.strip().splitlines()[-1]
    # a hazard counts as found only through a diagnostic on its span
    for r in scored["cases"]:
        assert bool(r["found"]) == bool(r["hit_codes"]) or r["label"] != "hazard"


def test_no_op_cases_are_scored_apart(scored: dict) -> None:
    noops = [r for r in scored["cases"] if r["label"] == "no-op"]
    overall = scored["families"]["overall"]
    assert overall["noops"] == len(noops) and overall["noops_flagged"] == sum(bool(r["flagged"]) for r in noops)
    assert all(r["found"] is None and r["false_positive"] is None for r in noops)
    assert overall["hazards"] + overall["lookalikes"] + overall["noops"] == len(scored["cases"])


def _run(status: str, jaxpr: str) -> dict:
    return {"checks": {"import": {"status": "ok", "detail": ""}, "grad": {"status": status, "detail": ""}},
            "grad_jaxpr": jaxpr}


@pytest.mark.parametrize("with_span, without, label", [
    (_run("ok", "{ lambda ; a. }"), _run("ok", "{ lambda ; a. }"), "no-op"),
    (_run("ok", "{ lambda ; a. }"), _run("ok", "{ lambda ; b. }"), "ok"),      # the statement changed the trace
    (_run("ok", "{ lambda ; a. }"), _run("wrong", "{ lambda ; a. }"), "ok"),   # ... or a result
    (_run("raises", "{ lambda ; a. }"), _run("ok", "{ lambda ; a. }"), "hazard"),
    (_run("ok", "{ lambda ; a. }"), None, "ok"),                               # no claim: no second run
])
def test_oracle_labels_a_no_op_only_when_both_runs_agree(with_span: dict, without: dict, label: str) -> None:
    from oracle import summarise

    case = EVAL / "cases" / "migration" / "pr30262_direct_linearize_flag.py"
    assert summarise(case, read_meta(case), with_span, without)["label"] == label


def test_without_span_replaces_each_marked_statement_by_pass() -> None:
    from oracle import without_span

    src = "import jax\njax.config.update('x', 1)  # eval: span\ndef f():\n    g()  # eval: span\n"
    assert without_span(src) == "import jax\npass  # eval: removed\ndef f():\n    pass  # eval: removed\n"
    with pytest.raises(SyntaxError):  # a span line that opens a block cannot be dropped alone
        without_span("if x:  # eval: span\n    y()\n")


def test_written_before_splits_by_commit(scored: dict) -> None:
    commit = scored["cases"][0]["written_at_commit"]
    proc = run_score("--json", "--written-before", commit)
    assert proc.returncode == 0, proc.stderr
    part = json.loads(proc.stdout)["written_before"]
    written_then = {r["id"] for r in scored["cases"] if r["written_at_commit"] == commit}
    assert written_then and not written_then & set(part["ids"])  # written at that HEAD, not before it
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if head != commit:  # every case recorded at an earlier HEAD counts as written before today's HEAD
        later = json.loads(run_score("--json", "--written-before", head).stdout)["written_before"]
        assert written_then <= set(later["ids"])


def test_references_are_well_formed() -> None:
    import csv

    rows = list(csv.DictReader((EVAL / "references.csv").open(encoding="utf-8")))
    assert 10 <= len(rows) <= 30
    for r in rows:
        assert list(r) == ["repo", "commit", "path", "line", "label", "family", "note"]
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", r["repo"]) and re.fullmatch(r"[0-9a-f]{40}", r["commit"])
        assert r["path"].endswith(".py") and int(r["line"]) > 0
        assert r["label"] in ("hazard", "ok", "unsure") and r["family"] in FAMILIES and r["note"]


def test_references_without_clones_are_reported_unavailable(tmp_path: Path) -> None:
    proc = run_score("--json", "--references", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    refs = json.loads(proc.stdout)["references"]
    assert refs["unavailable"] == len(refs["rows"]) and refs["hazards"] == 0
