"""The in-process verdicts are appended one line per record as each definition is checked
(vjplint.record.live); what a process killed while checking wrote is read back (issue #44, grads11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vjplint.record import clear, read_live

pytestmark = pytest.mark.unit

HEADER = {"format": 1, "device": "cpu", "device_kind": "cpu", "jax_version": "0.10.2", "pid": 4242,
          "pending": [{"file": "/p/ops.py", "line": 5, "qualname": "make.<locals>.a", "key": "ops.make.<locals>.a",
                       "kind": "vjp", "objects": 1},
                      {"file": "/p/ops.py", "line": 17, "qualname": "crash", "key": "ops.crash", "kind": "vjp",
                       "objects": 1},
                      {"file": "/p/ops.py", "line": 29, "qualname": "late.<locals>.b", "key": "ops.late.<locals>.b",
                       "kind": "jvp", "objects": 1},
                      {"file": "/p/ops.py", "line": 40, "qualname": "named", "key": "ops.named", "kind": "jvp",
                       "objects": 1}]}
VERDICT = {"file": "/p/ops.py", "line": 5, "row": 5, "qualname": "make.<locals>.a", "text": "", "key": "ops.make.<locals>.a",
           "kind": "vjp", "objects": 1, "calls": 3, "seconds": 1.0, "result": {"status": "verified", "checks": [],
                                                                               "inputs": [], "checked_at": 3}}


def _write(directory: Path, *records, torn: str = "") -> None:
    directory.mkdir(exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in records) + torn
    (directory / "live-4242-1.jsonl").write_text(text)


def test_a_process_killed_while_checking_keeps_its_verdicts_and_says_what_it_left(tmp_path: Path) -> None:
    _write(tmp_path, HEADER, {"begin": 0}, {"verdict": VERDICT}, {"begin": 1}, torn='{"verdict": {"file": "/p/o')
    found, device = read_live(str(tmp_path))
    assert device == {"device": "cpu", "device_kind": "cpu", "jax_version": "0.10.2", "reference": ""}
    assert found[("/p/ops.py", 5)][0]["result"]["status"] == "verified"
    crashed = found[("/p/ops.py", 17)][0]["result"]
    assert crashed["status"] == "unverified"
    assert crashed["reason"] == ("the process that called it (pid 4242) ended while checking it: a crash, or killed "
                                 "for memory (the definitions it checked before keep their verdicts); check it alone, "
                                 "with more memory free")
    assert found[("/p/ops.py", 29)][0]["result"]["reason"] == (
        "the process that called it (pid 4242) ended before checking it, while checking `crash` (line 17); only that "
        "process could reach it (defined in a function or a class body): run again with more memory free")
    assert ("/p/ops.py", 40) not in found  # reachable by its name: check-grads checks it itself


def test_a_finished_process_adds_nothing_and_the_older_one_file_form_is_still_read(tmp_path: Path) -> None:
    _write(tmp_path, HEADER, {"begin": 0}, {"verdict": VERDICT}, {"done": True, "seconds": 2.0})
    (tmp_path / "live-7-1.json").write_text(json.dumps({"format": 1, "device": "cpu", "verdicts": [
        dict(VERDICT, line=50)]}))
    found, _ = read_live(str(tmp_path))
    assert sorted(found) == [("/p/ops.py", 5), ("/p/ops.py", 50)]


def test_a_new_recording_removes_the_last_runs_verdict_lines(tmp_path: Path) -> None:
    _write(tmp_path, HEADER)
    (tmp_path / "keep.txt").write_text("")
    clear(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
