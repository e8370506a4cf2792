"""The server ends when its editor does: at `exit`, when stdin closes, and when the parent
process is gone, even while a lint is still running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


from tests.conftest import ROOT


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _initialize(tmp_path: Path) -> bytes:
    return _message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}})


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_the_server_exits_when_stdin_closes(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "vjplint", "server"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=tmp_path)
    try:
        assert proc.stdin is not None
        proc.stdin.write(_initialize(tmp_path))
        proc.stdin.flush()
        time.sleep(0.5)
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_server_exits_when_its_parent_is_gone(tmp_path: Path) -> None:
    # A parent shell starts the server with a pipe it keeps open through a sleeping sibling, then
    # dies: the server is reparented and must notice without any message from the client.
    script = (f"{sys.executable} -m vjplint server < /dev/zero-not-used > /dev/null 2>&1 & echo $!; sleep 2; exit 0")
    fifo = tmp_path / "in"
    os.mkfifo(fifo)
    keeper = subprocess.Popen(["sh", "-c", f"exec sleep 60 > {fifo}"])  # holds the pipe open
    try:
        shell = subprocess.run(["sh", "-c", script.replace("/dev/zero-not-used", str(fifo))],
                               capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=30)
        pid = int(shell.stdout.strip())
        assert _wait_gone(pid, 15), "the orphaned server kept running"
    finally:
        keeper.send_signal(signal.SIGTERM)
        keeper.wait()
