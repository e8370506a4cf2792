"""Issue 48's fault probes that had no test of their own (docs/performance.md, "The fault-injection
suite", maps every probe to its test): SIGTERM in the middle of a write, and a file swapped for a
directory while a `--fix` run holds its fixes or between two runs that share a cache. Through the
real CLI on real files; each fault lands at a chosen moment (the run stops itself at a seam of
vjplint.cli.fix), never after a sleep."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from tests.cli.test_cli_edges import CLIP_IN, CLIP_OUT, _files, _fix, _stopped
from tests.conftest import run_cli


@pytest.mark.cli
def test_sigterm_in_the_middle_of_a_write_leaves_every_file_whole_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    names = _files(tmp_path, 4)
    proc = _fix(tmp_path, VJPLINT_TEST_STOP_IN_WRITE="2")  # the third file's temporary file written, not renamed
    try:
        _stopped(proc)
        os.killpg(proc.pid, signal.SIGTERM)
        os.killpg(proc.pid, signal.SIGCONT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGTERM
    assert [(tmp_path / n).read_text() for n in names] == [CLIP_OUT, CLIP_OUT, CLIP_IN, CLIP_IN]  # none half-written
    left = sorted(p.name for p in tmp_path.iterdir() if p.name not in names)
    assert len(left) == 1 and left[0].startswith(f".mod_02.py.pid{proc.pid}.") and left[0].endswith(".vjplint-tmp")
    again = run_cli("--no-cache", "--fix", ".", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"vjplint: removed 1 temporary file left by an interrupted run: {left[0]}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert all((tmp_path / n).read_text() == CLIP_OUT for n in names)


@pytest.mark.cli
def test_a_file_swapped_for_a_directory_while_fix_holds_its_fixes_is_an_error_and_nothing_is_lost(
        tmp_path: Path) -> None:
    names = _files(tmp_path, 4)
    proc = _fix(tmp_path, VJPLINT_TEST_STOP_AFTER_WRITES="0")  # every fix made, nothing written yet
    try:
        _stopped(proc)
        (tmp_path / "mod_02.py").unlink()
        (tmp_path / "mod_02.py").mkdir()
        (tmp_path / "mod_02.py" / "inner.py").write_text(CLIP_IN)
        os.kill(proc.pid, signal.SIGCONT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # the other files' fixes are written; this one's problems are reported as left, its write as an error
    assert (proc.returncode, stderr) == (2, "vjplint: error: mod_02.py: cannot write the fixed file: Is a directory\n")
    assert stdout.endswith("\nFixed 6 problems.\nFound 2 problems (2 fixable with --fix).\n"), stdout
    findings = [line for line in stdout.splitlines() if ": VJP" in line]
    assert [line.split(" ")[0:2] for line in findings] == [["mod_02.py:8:19:", "VJP101"], ["mod_02.py:8:23:", "VJP101"]]
    assert [(tmp_path / n).read_text() for n in names if n != "mod_02.py"] == [CLIP_OUT] * 3
    assert (tmp_path / "mod_02.py" / "inner.py").read_text() == CLIP_IN  # the directory left as it is
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # no temporary file


@pytest.mark.cli
@pytest.mark.parametrize("swap", ["file_to_directory", "directory_to_file"])
def test_a_path_swapped_between_cached_runs_gives_what_a_run_without_the_cache_gives(tmp_path: Path,
                                                                                     swap: str) -> None:
    """The replay and the result cache hold a row for `pkg/mod.py` (or for `pkg/mod.py/inner.py`);
    the path then changes kind. The next cached run must answer as a cold one does."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "other.py").write_text(CLIP_IN)
    target = tmp_path / "pkg" / "mod.py"
    if swap == "file_to_directory":
        target.write_text(CLIP_IN)
    else:
        target.mkdir()
        (target / "inner.py").write_text(CLIP_IN)
    for _ in range(2):  # the second run is replayed: both records exist
        warm = run_cli("--output-format", "concise", ".", cwd=tmp_path)
        assert warm.returncode == 1, warm.stderr
    if swap == "file_to_directory":
        target.unlink()
        target.mkdir()
        (target / "inner.py").write_text(CLIP_IN)
    else:
        shutil.rmtree(target)
        target.write_text(CLIP_IN)
    cached = run_cli("--output-format", "concise", ".", cwd=tmp_path)
    cold = run_cli("--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert (cached.returncode, cached.stdout, cached.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    expected_file = "pkg/mod.py/inner.py" if swap == "file_to_directory" else "pkg/mod.py"
    assert any(line.startswith(expected_file + ":") for line in cold.stdout.splitlines()), cold.stdout
