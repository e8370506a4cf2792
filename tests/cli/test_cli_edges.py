"""The command line at its edges, through the real CLI: what a killed run leaves is removed by the
next; the loser of two concurrent `--fix` runs reports only what it did; Ctrl-C as the run ends
prints no traceback; a symbolic link loop or a device named on the command line is an error; a
snippet of a very long line is cut around the column."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_cli
from vjplint.output.text import SNIPPET, excerpt

CLIP_IN = (FIXTURES / "fix" / "safe_canonical" / "input.py").read_text(encoding="utf-8")
CLIP_OUT = (FIXTURES / "fix" / "safe_canonical" / "expected.py").read_text(encoding="utf-8")
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def _fix(cwd: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "vjplint", "--fix", "--no-cache", "."], cwd=cwd,
                            env={**ENV, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _stopped(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until `proc` has stopped itself (the seams of vjplint.cli.fix._stop_after_writes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status = os.waitpid(proc.pid, os.WNOHANG | os.WUNTRACED)
        if pid:
            assert os.WIFSTOPPED(status), f"ended instead of stopping: status {status}"
            return
        time.sleep(0.01)
    raise AssertionError("the run did not stop")


def _files(directory: Path, count: int) -> list:
    names = [f"mod_{i:02d}.py" for i in range(count)]
    for name in names:
        (directory / name).write_text(CLIP_IN)
    return names


@pytest.mark.cli
def test_a_killed_runs_temporary_file_is_removed_by_the_next_run(tmp_path: Path) -> None:
    names = _files(tmp_path, 4)
    proc = _fix(tmp_path, VJPLINT_TEST_STOP_IN_WRITE="2")  # stops with the third file's temp file written
    try:
        _stopped(proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name not in names)
    assert len(left) == 1 and left[0].startswith(f".mod_02.py.pid{proc.pid}.") and left[0].endswith(".vjplint-tmp")
    assert [(tmp_path / n).read_text() == CLIP_OUT for n in names] == [True, True, False, False]
    # a temporary file of a process that still runs (this one) is someone's write in progress: kept
    alive = tmp_path / f".mod_03.py.pid{os.getpid()}.abcdefgh.vjplint-tmp"
    alive.write_text("in progress")
    again = run_cli("--no-cache", "--fix", ".", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"vjplint: removed 1 temporary file left by an interrupted run: {left[0]}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names + [alive.name])
    assert all((tmp_path / n).read_text() == CLIP_OUT for n in names)


@pytest.mark.cli
def test_the_loser_of_two_concurrent_fix_runs_reports_only_what_it_did(tmp_path: Path) -> None:
    names = _files(tmp_path, 5)
    loser = _fix(tmp_path, VJPLINT_TEST_STOP_AFTER_WRITES="0")  # its fixes made, nothing written yet
    try:
        _stopped(loser)
        winner = run_cli("--no-cache", "--fix", ".", cwd=tmp_path)
        assert winner.returncode == 0 and winner.stdout.strip().endswith("Fixed 10 problems."), winner.stdout
        (tmp_path / names[4]).write_text(CLIP_IN + "# edited meanwhile\n")  # and a file someone edits
        os.kill(loser.pid, signal.SIGCONT)
        stdout, stderr = loser.communicate(timeout=120)
    finally:
        if loser.poll() is None:
            os.killpg(loser.pid, signal.SIGKILL)
    # the winner's fixes are neither counted nor reported again as problems; the edited file is an error
    assert stderr.splitlines() == [
        "vjplint: 4 files were fixed by another run meanwhile, as this one would have: left as they are",
        "vjplint: error: mod_04.py: cannot write the fixed file: the file changed while it was being fixed"]
    assert (loser.returncode, stdout) == (2, "")


@pytest.mark.cli
def test_ctrl_c_as_a_fix_run_ends_prints_no_traceback(tmp_path: Path) -> None:
    _files(tmp_path, 3)
    for delay in (0.0, 0.001, 0.005, 0.02):  # the signal lands at another moment of the way out
        for name in tmp_path.glob("*.py"):
            name.write_text(CLIP_IN)
        proc = _fix(tmp_path)
        assert proc.stdout is not None
        summary = proc.stdout.readline()  # "Fixed 6 problems.": printed last
        time.sleep(delay)
        for _ in range(3):
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                break
        rest, stderr = proc.communicate(timeout=60)
        assert summary == "Fixed 6 problems.\n" and rest == ""
        assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
        assert (proc.returncode, stderr) in ((0, ""), (130, "vjplint: interrupted\n")), (proc.returncode, stderr)


@pytest.mark.cli
def test_ctrl_c_after_every_fix_is_written_is_a_plain_interrupt(tmp_path: Path, monkeypatch, capsys) -> None:
    """A Ctrl-C that lands once every fix is on disk (as the summary is made: the moment the test
    above reaches by timing, which a loaded machine moves) says "vjplint: interrupted", never
    "interrupted before any file was written". Deterministic: the interrupt is raised where the
    summary is made."""
    from vjplint.cli import fix, main

    names = _files(tmp_path, 3)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fix, "emit", interrupt)
    monkeypatch.chdir(tmp_path)
    rc = main(["--fix", "--no-cache", "--jobs", "1", "."])
    out, err = capsys.readouterr()
    assert (rc, err) == (130, "vjplint: interrupted\n")
    assert [(tmp_path / n).read_text() for n in names] == [CLIP_OUT] * 3


@pytest.mark.cli
def test_a_symbolic_link_loop_or_a_device_named_on_the_command_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "loop.py").symlink_to("loop.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "clean.py").write_text("x = 1  # custom_vjp\n")
    loop = run_cli("--no-cache", "loop.py", cwd=tmp_path)
    assert (loop.returncode, loop.stdout, loop.stderr) == (2, "", "vjplint: error: loop.py: is a symbolic link loop\n")
    zero = run_cli("--no-cache", "zero.py", cwd=tmp_path, timeout=60)
    assert (zero.returncode, zero.stdout) == (2, "")
    assert zero.stderr == ("vjplint: error: zero.py: is a symbolic link to /dev/zero, which is not a regular file "
                           "(a character device); skipped\n")
    walked = run_cli("--no-cache", ".", cwd=tmp_path, timeout=60)  # met in a directory: warnings
    assert (walked.returncode, walked.stdout) == (0, "All checks passed!\n")
    assert walked.stderr.splitlines() == [
        "vjplint: warning: loop.py: is a symbolic link loop",
        "vjplint: warning: zero.py: is a symbolic link to /dev/zero, which is not a regular file (a character "
        "device); skipped"]


@pytest.mark.cli
def test_the_snippet_of_a_20_kb_line_is_cut_around_the_column(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("import jax\n# custom_vjp\nx = '" + "a" * 20000 + "' $ 1\n")
    proc = run_cli("--no-cache", "long.py", cwd=tmp_path)
    assert proc.returncode == 1
    first, code, caret = proc.stdout.splitlines()[:3]
    column = int(first.split(":")[2])
    assert first == f"long.py:3:{column}: VJP900 cannot parse this file: syntax error: invalid syntax"
    line = "x = '" + "a" * 20000 + "' $ 1"
    shown, offset, _ = excerpt(line, column, 1)
    assert code == "   3 | " + shown and len(shown) <= SNIPPET + 2 and shown.endswith("…")
    assert caret == "     | " + " " * offset + "^" and line[column - 1] == shown[offset]


@pytest.mark.unit
def test_excerpt_keeps_short_lines_and_centres_long_ones_on_the_column() -> None:
    assert excerpt("x = 1", 5, 1) == ("x = 1", 4, 1)
    line = "".join(chr(ord("a") + i % 26) for i in range(1000))
    shown, offset, width = excerpt(line, 501, 900)
    assert shown == "…" + line[460:580] + "…" and shown[offset] == line[500] and offset == 41
    assert width == 80  # the caret stops where the cut does
    assert excerpt(line, 1000, 1) == ("…" + line[880:], 120, 1)  # the end: no cut after it
