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

import pytest


from tests.conftest import ROOT
from tests.server import HANG_GUARD_S
from tests.server.test_server_faults import RawClient, frame, hover


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
        assert proc.wait(timeout=HANG_GUARD_S) == 0
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
                               capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=HANG_GUARD_S)
        pid = int(shell.stdout.strip())
        assert _wait_gone(pid, HANG_GUARD_S), "the orphaned server kept running"
    finally:
        keeper.send_signal(signal.SIGTERM)
        keeper.wait()


# -- LSP's answers at the end of a session, through the real server ---------------------------------
def test_requests_after_shutdown_are_answered_invalid_request_and_exit_then_gives_0(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    client.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    assert client.answer("bye") == {"jsonrpc": "2.0", "id": "bye", "result": None}
    client.send(hover(5))
    client.send({"jsonrpc": "2.0", "id": 6, "method": "shutdown"})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": "x"}}})
    for msg_id, method in ((5, "textDocument/hover"), (6, "shutdown")):
        assert client.answer(msg_id) == {"jsonrpc": "2.0", "id": msg_id, "error": {
            "code": -32600, "message": f"the server is shut down: {method!r} is not served (only 'exit' is)"}}
    client.send({"jsonrpc": "2.0", "method": "exit"})
    assert client.exit_code() == 0


def test_exit_without_shutdown_gives_1(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    client.alive(2)
    client.send({"jsonrpc": "2.0", "method": "exit"})
    assert client.exit_code() == 1


def test_the_end_of_input_in_the_middle_of_a_message_gives_1_and_says_so(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    client.alive(2)
    client.write(frame(hover(3))[:-20])  # the header and most of the body: then the client is gone
    assert client.proc.stdin is not None
    client.proc.stdin.close()
    assert client.exit_code() == 1
    held = len(frame(hover(3))) - 20
    assert client.stderr() == ["vjplint server: warning: the client's input ended in the middle of a message "
                               f"({held} bytes held)"]


def test_apply_autofix_for_a_document_that_is_not_open_is_answered_invalid_params(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    client.send({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": {
        "command": "vjplint.applyAutofix", "arguments": [{"uri": (tmp_path / "closed.py").as_uri()}]}})
    answer = client.answer(3)
    assert answer is not None and answer["error"]["code"] == -32602, answer  # InvalidParams
    assert answer["error"]["message"] == (
        'vjplint.applyAutofix needs the URI of an open document, as [{"uri": ...}]; got '
        f'[{{"uri": "{(tmp_path / "closed.py").as_uri()}"}}]')
    client.alive(4)
    assert client.stop().splitlines() == [
        "vjplint server: error: FeatureRequestError: " + answer["error"]["message"]]


def _far_processes(server_pid: int) -> list:
    """The pids of `server_pid`'s far processes (vjplint.server.far), from /proc."""
    found = []
    for task in Path(f"/proc/{server_pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                if b"vjplint.server.far" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(int(child))
            except OSError:
                pass
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the far process in /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_server_killed_while_a_big_document_is_analysed_leaves_no_far_process(tmp_path: Path, sig: int) -> None:
    """The far process (vjplint.server.far) is held in its lint (VJPLINT_FAR_WAIT_FOR, never let go)
    when the server is killed: it ends too, not left running the lint for nobody."""
    big_text = "import jax\n" + "".join(f"x_{i} = {i}\n" for i in range(300))
    (tmp_path / "big.py").write_text(big_text)
    client = RawClient(tmp_path, env={"VJPLINT_FAR_WAIT_FOR": str(tmp_path / "never")})
    client.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
        "initializationOptions": {"lintOnChangeMaxSize": 1000}}})  # big.py is over it: the far process
    assert client.answer("init") is not None
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": (tmp_path / "big.py").as_uri(), "languageId": "python", "version": 1, "text": big_text}}})
    deadline = time.monotonic() + HANG_GUARD_S
    far: list = []
    while not far and time.monotonic() < deadline:  # the far process is started for the big document
        far = _far_processes(client.proc.pid)
        time.sleep(0.05)
    assert len(far) == 1, far
    os.kill(client.proc.pid, sig)
    assert client.proc.wait(timeout=HANG_GUARD_S) == -sig
    assert _wait_gone(far[0], HANG_GUARD_S), "the far process outlived the server"
