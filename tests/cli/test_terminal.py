"""What a terminal gets (issue 47): colour (`--color`, NO_COLOR, FORCE_COLOR), progress lines for
`--fix` and `verify`, and `--watch` re-checking on a change. Real processes on pseudo-terminals
(the `pty` module); every wait is on output, with a generous bound, never a sleep."""

from __future__ import annotations

import os
import pty
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from tests.cli.test_ruff_flags import SAFE, UNSAFE
from tests.conftest import ROOT, pythonpath, run_cli

RED_CODE = "\x1b[1;31mVJP101\x1b[0m"
_PROGRESS_NOW = ("import sys, vjplint.cli.check as check; check.PROGRESS_DELAY_S = 0.0; "
                 "from vjplint.cli import main; sys.exit(main(sys.argv[1:]))")


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
                                                       "VJPLINT_OUTPUT_FORMAT")}
    return {**env, "PYTHONPATH": pythonpath(ROOT), "TERM": "xterm", **(extra or {})}


def _run(args: List[str], cwd: Path, tty: str, env: Optional[Dict[str, str]] = None,
         code: Optional[str] = None) -> Tuple[int, str, str]:
    """vjplint with `tty` ("stdout", "stderr", or "" for none) on a pseudo-terminal, the other
    stream(s) on pipes: (exit code, stdout, stderr), both as text."""
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "vjplint", *args]
    if not tty:
        proc = subprocess.run(command, cwd=cwd, env=_env(env), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=300)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, cwd=cwd, env=_env(env), stdin=subprocess.DEVNULL,
                            stdout=slave if tty == "stdout" else subprocess.PIPE,
                            stderr=slave if tty == "stderr" else subprocess.PIPE)
    os.close(slave)
    piped: List[bytes] = []
    pipe = proc.stderr if tty == "stdout" else proc.stdout
    reader = threading.Thread(target=lambda: piped.append(pipe.read()))  # type: ignore[union-attr]
    reader.start()
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    reader.join(timeout=300)
    rc = proc.wait(timeout=300)
    terminal = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    other = b"".join(piped).decode("utf-8", "replace")
    return (rc, terminal, other) if tty == "stdout" else (rc, other, terminal)


# -- colour -------------------------------------------------------------------------------------
def test_colour_on_a_terminal_and_never_in_a_pipe(tmp_path):
    (tmp_path / "a.py").write_text(SAFE)
    rc, out, _ = _run(["--no-cache", "--output-format", "concise", "a.py"], tmp_path, "stdout")
    assert rc == 1
    assert out.startswith("\x1b[1ma.py\x1b[0m\x1b[36m:\x1b[0m7\x1b[36m:\x1b[0m10\x1b[36m:\x1b[0m "
                          f"{RED_CODE}\x1b[36m [*]\x1b[0m `lo` (position 0)"), repr(out)
    assert out.endswith("\nFound 1 problem (1 fixable with --fix).\n")
    rc, out, _ = _run(["--no-cache", "a.py"], tmp_path, "stdout")  # the full format: caret and help too
    assert "     |          \x1b[1;31m^^\x1b[0m\n" in out and "     = \x1b[1m\x1b[36mhelp\x1b[0m: Move `lo`" in out
    piped = run_cli("--no-cache", "--output-format", "concise", "a.py", cwd=tmp_path, env={"NO_COLOR": ""})
    assert "\x1b[" not in piped.stdout and piped.stdout.startswith("a.py:7:10: VJP101 [*] `lo`")


def test_no_color_and_color_never_turn_it_off_on_a_terminal(tmp_path):
    (tmp_path / "a.py").write_text(SAFE)
    for args, env in ((["--color", "never"], {}), ([], {"NO_COLOR": "1"}), ([], {"TERM": "dumb"}),
                      (["--color", "never"], {"FORCE_COLOR": "1"}), ([], {"NO_COLOR": "1", "FORCE_COLOR": "1"}),
                      ([], {"CLICOLOR": "0"}), ([], {"NO_COLOR": "1", "CLICOLOR_FORCE": "1"})):
        rc, out, _ = _run(["--no-cache", "--output-format", "concise", *args, "a.py"], tmp_path, "stdout", env)
        assert rc == 1 and "\x1b[" not in out and out.startswith("a.py:7:10: VJP101 [*] `lo`"), (args, env)


def test_force_color_and_color_always_colour_a_pipe(tmp_path):
    (tmp_path / "a.py").write_text(SAFE)
    for args, env in ((["--color", "always"], {"NO_COLOR": "1"}), ([], {"FORCE_COLOR": "1"}),
                      ([], {"CLICOLOR_FORCE": "1"})):
        proc = run_cli("--no-cache", "--output-format", "concise", *args, "a.py", cwd=tmp_path,
                       env={"NO_COLOR": "", **env})
        assert RED_CODE in proc.stdout, (args, env)
    proc = run_cli("--no-cache", "--output-format", "concise", "a.py", cwd=tmp_path,
                   env={"NO_COLOR": "", "FORCE_COLOR": "", "CLICOLOR_FORCE": "0"})
    assert "\x1b[" not in proc.stdout
    # never in machine formats, nor in a file
    proc = run_cli("--no-cache", "--output-format", "json", "--color", "always", "a.py", cwd=tmp_path)
    assert "\x1b[" not in proc.stdout
    proc = run_cli("--no-cache", "--color", "always", "-o", "r.txt", "a.py", cwd=tmp_path)
    assert "\x1b[" not in (tmp_path / "r.txt").read_text()
    proc = run_cli("--no-cache", "--color", "sometimes", "a.py", cwd=tmp_path)
    assert proc.returncode == 2 and "argument --color: invalid choice: 'sometimes'" in proc.stderr


def test_a_recorded_answer_is_not_replayed_where_colour_is_wanted(tmp_path):
    """The replay of an unchanged run prints plain text: a terminal that wants colour gets the full run."""
    (tmp_path / "b.py").write_text(SAFE.replace("jnp.clip(g, lo, 1.0)", "g"))  # VJP101-free: a clean run
    (tmp_path / "c.py").write_text(UNSAFE)
    first = run_cli("--output-format", "concise", "--ignore", "VJP102", ".", cwd=tmp_path)
    assert first.returncode == 0
    rc, out, _ = _run(["--output-format", "concise", "--ignore", "VJP102", "."], tmp_path, "stdout")
    assert (rc, out) == (0, "All checks passed!\n")


# -- progress -----------------------------------------------------------------------------------
def test_fix_shows_files_linted_then_files_fixed_on_a_terminal(tmp_path):
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(SAFE)
    rc, out, err = _run(["--no-cache", "-j", "1", "--fix", "."], tmp_path, "stderr", code=_PROGRESS_NOW)
    assert rc == 0 and out == "Fixed 3 problems.\n"
    linted = "".join(f"\r\x1b[Kvjplint: {i}/3 files" for i in (1, 2, 3)) + "\r\x1b[K"
    fixed = "".join(f"\r\x1b[Kvjplint: {i}/3 files fixed" for i in (1, 2, 3)) + "\r\x1b[K"
    assert err == linted + fixed, repr(err)
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(SAFE)
    rc, out, err = _run(["--no-cache", "-j", "1", "--fix", "."], tmp_path, "", code=_PROGRESS_NOW)
    assert (rc, out, err) == (0, "Fixed 3 problems.\n", "")


@pytest.mark.jax
def test_verify_shows_files_verified_on_a_terminal(tmp_path):
    (tmp_path / "a.py").write_text(SAFE)
    rc, out, err = _run(["verify", "a.py"], tmp_path, "stderr", code=_PROGRESS_NOW)
    assert rc == 0, out
    assert err == "\r\x1b[Kvjplint: 0/1 files verified\r\x1b[Kvjplint: 1/1 files verified\r\x1b[K", repr(err)
    assert out.endswith(" 1 verified, 0 failed, 0 unverified.\n")
    rc, out, err = _run(["verify", "-q", "a.py"], tmp_path, "stderr", code=_PROGRESS_NOW)
    assert rc == 0 and err == ""


CHECKED = """\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def {name}(x):
    return jnp.sin(x)


def {name}_fwd(x):
    return {name}(x), x


def {name}_bwd(x, g):
    return (g * jnp.cos(x),)


{name}.defvjp({name}_fwd, {name}_bwd)



def EXAMPLE_ARGS():
    return {{"{name}": (jnp.array([0.5, 1.0, 1.5]),)}}
"""


@pytest.mark.jax
@pytest.mark.parametrize("one_process", [False, True])
def test_check_grads_counts_modules_checked_on_a_terminal(tmp_path, one_process):
    """check-grads' progress line is the other commands' (vjplint.output.progress), also on the
    path a one-device machine (a TPU) takes, where one child checks every module: the count moves
    as that child reaches the next module. The one-process path is forced here on the CPU."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(CHECKED.format(name=f"sin_{name}"))
    code = _PROGRESS_NOW if not one_process else _PROGRESS_NOW.replace(
        "from vjplint.cli import main", "import vjplint.gradcheck.api as api; "
        "api.single_process_accelerator = lambda: True; from vjplint.cli import main")
    rc, out, err = _run(["check-grads", "-j", "1", "a.py", "b.py"], tmp_path, "stderr", code=code)
    assert rc == 0, out + err
    assert err == ("\r\x1b[Kvjplint: 0/2 modules checked\r\x1b[Kvjplint: 1/2 modules checked (a.py)"
                   "\r\x1b[Kvjplint: 2/2 modules checked\r\x1b[K"), repr(err)
    assert "2 passed, 0 failed" in out, out
    rc, out, err = _run(["check-grads", "-q", "-j", "1", "a.py", "b.py"], tmp_path, "stderr", code=code)
    assert rc == 0 and err == ""


# -- watch --------------------------------------------------------------------------------------
class _Lines:
    """A process's stdout, line by line, on a thread: `wait_for` returns the lines up to the one
    containing `text`, or fails after `bound` seconds."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.queue: "queue.Queue[str]" = queue.Queue()
        self.seen: List[str] = []
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            self.queue.put(line)
        self.queue.put("")

    def wait_for(self, text: str, bound: float = 120.0) -> List[str]:
        got: List[str] = []
        deadline = time.monotonic() + bound
        while True:
            try:
                line = self.queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {text!r} within {bound} s; got {self.seen!r}") from None
            if line == "":
                raise AssertionError(f"the process ended before {text!r}; got {self.seen!r}")
            self.seen.append(line)
            got.append(line)
            if text in line:
                return got


def test_watch_checks_again_when_a_file_changes(tmp_path):
    pytest.importorskip("watchfiles")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    proc = subprocess.Popen([sys.executable, "-m", "vjplint", "check", "--watch", "--no-cache",
                             "--output-format", "concise", "proj"], cwd=tmp_path,
                            env=_env({"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = _Lines(proc)
        first = lines.wait_for("Watching for file changes.")
        assert first[:2] == ["Starting linter in watch mode...\n", "All checks passed!\n"]
        (project / "a.py").write_text(SAFE)
        second = lines.wait_for("Watching for file changes.")
        assert second[0] == "File change detected...\n"
        assert second[1].startswith("proj/a.py:7:10: VJP101 [*] `lo` (position 0)")
        assert second[2] == "Found 1 problem (1 fixable with --fix).\n"
        (project / "notes.txt").write_text("not Python\n")  # ignored: only Python, notebooks, config
        (project / "b.py").write_text(UNSAFE)
        third = lines.wait_for("Watching for file changes.")
        assert third[0] == "File change detected..." + "\n"
        assert [line.split(" ", 2)[:2] for line in third[1:-2]] == [["proj/a.py:7:10:", "VJP101"],
                                                                    ["proj/b.py:6:10:", "VJP102"]]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode in (0, 130)


def test_watch_refuses_what_it_cannot_repeat(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    for extra in (["--diff"], ["--add-noqa"], ["--show-files"]):
        proc = run_cli("--watch", *extra, "a.py", cwd=tmp_path)
        assert proc.returncode == 2 and "--watch checks (or, with --fix, fixes) files again" in proc.stderr
    proc = run_cli("--watch", "missing.py", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "vjplint: error: --watch: no such file or directory: missing.py\n")


def test_watch_clears_the_screen_on_a_terminal(tmp_path):
    pytest.importorskip("watchfiles")
    import select

    (tmp_path / "a.py").write_text("x = 1\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "vjplint", "--watch", "--no-cache", "a.py"], cwd=tmp_path,
                            env=_env({"NO_COLOR": "1"}), stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while b"Watching for file changes." not in seen:
            ready, _, _ = select.select([master], [], [], max(deadline - time.monotonic(), 0))
            assert ready, f"no 'Watching for file changes.' within 120 s; got {seen!r}"
            seen += os.read(master, 4096)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(master)
    assert seen.startswith(b"\x1b[2J\x1b[3J\x1b[HStarting linter in watch mode...\r\nAll checks passed!\r\n["), seen


def test_watch_without_watchfiles_says_how_to_install_it(tmp_path):
    """The `watch` extra missing: a usage error with the install command, not a traceback."""
    (tmp_path / "a.py").write_text("x = 1\n")
    code = ("import sys; sys.modules['watchfiles'] = None; from vjplint.cli import main; "
            "sys.exit(main(sys.argv[1:]))")  # None in sys.modules: `import watchfiles` raises ImportError
    rc, out, err = _run(["--watch", "a.py"], tmp_path, "", code=code)
    assert (rc, out) == (2, "")
    assert err.startswith("vjplint: error: --watch needs the watchfiles package: ") and "[watch]" in err, err
