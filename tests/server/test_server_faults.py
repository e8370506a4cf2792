"""Fault injection: a client that writes raw bytes to `vjplint server` and breaks the protocol
(headers, bodies, JSON, types, methods, documents, edits, cancels). After each fault the next
request is answered, `shutdown` too, and stderr holds one line per fault and no traceback."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lsprotocol import types

from tests.conftest import ROOT
from tests.server import HANG_GUARD_S


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
END: Dict[str, Any] = {}  # put in the inbox when the server's output ends
SOURCE = '''import jax

@jax.custom_vjp
def clip(x):
    return x

def clip_fwd(x):
    return x, None

def clip_bwd(g):
    return (g,)

clip.defvjp(clip_fwd, clip_bwd)
'''


def frame(payload: Any, length: Optional[bytes] = None) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"Content-Length: %s\r\n\r\n%s" % (str(len(body)).encode() if length is None else length, body)


class RawClient:
    """The server in a process; what it writes is read by a thread into a queue of messages."""

    def __init__(self, cwd: Path, env: Optional[Dict[str, str]] = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "vjplint", "server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**ENV, **(env or {})},
                                     cwd=cwd)
        self.inbox: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []
        self.ended = False  # the server's output ended
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            line = out.readline()
            while line.strip():
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                line = out.readline()
            if not line or length is None:
                self.inbox.put(END)  # the server's output ended
                return
            self.inbox.put(json.loads(out.read(length)))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, payload: Any, length: Optional[bytes] = None) -> None:
        self.write(frame(payload, length))

    def answer(self, msg_id: Any, timeout: float = HANG_GUARD_S) -> Optional[Dict[str, Any]]:
        """The answer to request `msg_id`, waited for until it comes or the server's output ends
        (None); `timeout` only guards against a hang."""
        found = self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)
        return found[-1] if found else None

    def wait_for(self, wanted: Any, timeout: float = HANG_GUARD_S) -> List[Dict[str, Any]]:
        """The messages seen so far that `wanted` accepts, once there is one: waited for until one
        comes or the server's output ends ([]); `timeout` only guards against a hang."""
        deadline = time.monotonic() + timeout
        while True:
            found = [m for m in self.seen if wanted(m)]
            left = deadline - time.monotonic()
            if found or left <= 0 or self.ended:
                return found
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if message is END:
                self.ended = True
            else:
                self.seen.append(message)

    def exit_code(self, timeout: float = HANG_GUARD_S) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> List[str]:
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode().splitlines()

    def initialize(self, root: Path) -> None:
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
        assert self.answer("init") is not None
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def alive(self, msg_id: Any) -> Dict[str, Any]:
        """A request every server answers: the debug command."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": "workspace/executeCommand",
                   "params": {"command": "vjplint.printDebugInformation", "arguments": []}})
        answer = self.answer(msg_id)
        assert answer is not None and "vjplint" in answer.get("result", ""), (msg_id, answer, self.stop())
        return answer

    def stop(self) -> str:
        """shutdown (answered), exit (code 0); the server's stderr."""
        self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
        answer = self.answer("bye")
        self.send({"jsonrpc": "2.0", "method": "exit"})
        try:
            code = self.proc.wait(timeout=HANG_GUARD_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        assert self.proc.stderr is not None
        stderr = self.proc.stderr.read().decode()
        assert answer == {"jsonrpc": "2.0", "id": "bye", "result": None}, stderr
        assert code == 0, stderr
        return stderr


def hover(msg_id: Any, uri: str = "file:///nowhere.py") -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover",
            "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}}


LINE = "vjplint server: warning: broken message from the client: "
# Each broken frame: the bytes, the line the server logs, and whether the request inside is answered.
FRAMING_FAULTS = {
    "not a number": (frame(hover(7), b"seven"), LINE + "a message whose Content-Length is 'seven', not a "
                     "positive number; read as 'textDocument/hover' (request 7)"),
    "negative": (frame(hover(7), b"-90"), LINE + "a message whose Content-Length is '-90', not a positive "
                 "number; read as 'textDocument/hover' (request 7)"),
    "missing": (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + json.dumps(hover(7)).encode(),
                LINE + "a message without a Content-Length header; read as 'textDocument/hover' (request 7)"),
    "too small": (frame(hover(7), b"20"), LINE + "Content-Length 20 is smaller than its message (159 bytes); "
                  "read as 'textDocument/hover' (request 7)"),
    "too large": (frame(hover(7), b"5000"), LINE + "Content-Length 5000 is larger than its message (159 bytes); "
                  "read as 'textDocument/hover' (request 7)"),
    "no header at all": (json.dumps(hover(7)).encode(), LINE + "159 bytes that are not a message header; "
                         "read as 'textDocument/hover' (request 7)"),
}


@pytest.mark.parametrize("fault", list(FRAMING_FAULTS))
@pytest.mark.parametrize("then", ["at once", "after a pause"])
def test_a_broken_frame_is_logged_in_one_line_its_request_answered_and_shutdown_too(
        tmp_path: Path, fault: str, then: str) -> None:
    data, line = FRAMING_FAULTS[fault]
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    client.write(data)
    if then == "after a pause":  # the client waits for the answer before it sends anything else
        assert client.answer(7) == {"jsonrpc": "2.0", "id": 7, "result": None}
    client.alive(8)
    # hover runs in the lint thread (it reads the current analysis): its answer may follow 8's
    assert client.answer(7) == {"jsonrpc": "2.0", "id": 7, "result": None}
    stderr = client.stop()
    assert stderr.splitlines() == [line]


@pytest.mark.parametrize("then", ["its white space", "the next message"])
def test_a_frame_whose_counted_trailing_spaces_come_after_a_pause_is_broken_only_if_they_never_come(
        tmp_path: Path, then: str) -> None:
    """Content-Length counts four spaces after the JSON (JSON allows them) that the client sends only
    after a pause: the request is answered at the pause, and nothing is logged when the spaces come;
    when the next message comes instead, the header overstated the body, logged in one line."""
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    body = json.dumps(hover(7)).encode()
    client.write(b"Content-Length: %d\r\n\r\n%s" % (len(body) + 4, body))
    assert client.answer(7) == {"jsonrpc": "2.0", "id": 7, "result": None}  # taken once the client paused
    if then == "its white space":
        client.write(b"    ")
    client.alive(8)
    stderr = client.stop()
    assert stderr.splitlines() == ([] if then == "its white space" else [
        LINE + f"Content-Length {len(body) + 4} is larger than its message ({len(body)} bytes); "
               "read as 'textDocument/hover' (request 7)"])


def test_content_faults_get_error_answers_or_one_line_and_the_server_goes_on(tmp_path: Path) -> None:
    (tmp_path / "clip.py").write_text(SOURCE)
    uri = (tmp_path / "clip.py").as_uri()
    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    # invalid JSON under a good header: the id it shows is answered with a parse error
    client.send(b'{"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover", "params": {"textDocument": ')
    assert client.answer(11)["error"]["code"] == -32700  # type: ignore[index]
    client.send(b"\xff\xfe not UTF-8 \x00")
    client.send(b"[1, 2, 3]")  # JSON, not JSON-RPC
    client.alive(12)
    # wrong types: params of another shape, an id that is an object, params that are a list
    client.send({"jsonrpc": "2.0", "id": 13, "method": "textDocument/hover", "params": {"textDocument": 42}})
    assert client.answer(13)["error"]["code"] == -32602  # type: ignore[index]
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": "clip.py"}})
    client.send({"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"})
    client.alive(14)
    # unknown methods: a request is answered MethodNotFound, a notification ignored
    client.send({"jsonrpc": "2.0", "id": 15, "method": "vjplint/nothing", "params": {}})
    assert client.answer(15)["error"]["code"] == -32601  # type: ignore[index]
    client.send({"jsonrpc": "2.0", "method": "vjplint/nothingEither", "params": {}})
    # a change to a document never opened, then an edit beyond the end of an open one
    client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": (tmp_path / "never.py").as_uri(), "version": 2},
        "contentChanges": [{"range": {"start": {"line": 40, "character": 0}, "end": {"line": 41, "character": 0}},
                            "text": "x"}]}})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": SOURCE}}})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 900, "character": 5}, "end": {"line": 2, "character": 0}},
                            "text": "y = 1\n"}]}})
    # interleaved cancels: of a request never sent, and of one in flight
    client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 999}})
    client.send({"jsonrpc": "2.0", "id": 16, "method": "textDocument/diagnostic",
                 "params": {"textDocument": {"uri": uri}}})
    client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 16}})
    client.alive(17)
    assert client.answer(16) is not None  # cancelled or answered, never left waiting
    # the document is still linted after all that
    client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": SOURCE + "\n"}]}})
    client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"].get("version") == 3)
    published = [m["params"] for m in client.seen if m.get("method") == "textDocument/publishDiagnostics"
                 and m["params"].get("version") == 3]
    assert [d["code"] for d in published[-1]["diagnostics"]] == ["VJP305"]
    stderr = client.stop()
    warning = "vjplint server: warning: "
    assert stderr.splitlines() == [
        warning + "unreadable message from the client (Expecting value: line 1 column 89 (char 88)), answered as "
                  "an error to request 11",
        warning + "unreadable message from the client (Expecting value: line 1 column 1 (char 0))",
        warning + "message from the client is not JSON-RPC 2.0: [1, 2, 3]",
        warning + "request 13 from the client answered with an error: invalid params for 'textDocument/hover': "
                  "ClassValidationError: While structuring HoverRequest (1 sub-exception)",
        warning + "message from the client not understood: ClassValidationError: While structuring "
                  "DidOpenTextDocumentNotification (1 sub-exception)",
        warning + "message from the client not understood: JsonRpcInvalidRequest: an id must be a number or a "
                  "string, not dict",
        "vjplint server: error: FeatureRequestError: Method Not Found: vjplint/nothing",
        warning + "Ignoring notification for unknown method 'vjplint/nothingEither'",
        warning + "textDocument/didChange for a document that is not open, ignored: "
                  + (tmp_path / "never.py").as_uri(),
        warning + f"textDocument/didChange: the range 900:5-2:0 is outside {uri} (13 lines); applied as 2:0-13:0",
        warning + 'Cancel notification for unknown message id "999"',
    ]


FAULTS = [data for data, _ in FRAMING_FAULTS.values()] + [
    frame(b"{not json"), frame(b"\x00" * 10), b"\r\n\r\n", frame({"jsonrpc": "2.0", "method": "vjplint/none"}),
    frame({"jsonrpc": "2.0", "id": "x", "method": "textDocument/hover", "params": []}),
    frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "nothing"}}),
]


@pytest.mark.fuzz  # a hypothesis test (its layer), of a real server over stdio
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(range(len(FAULTS))), min_size=2, max_size=6),
       st.lists(st.integers(1, 200), min_size=1, max_size=8))
def test_any_sequence_of_faults_in_any_chunks_leaves_the_server_answering(
        tmp_path: Path, faults: List[int], cuts: List[int]) -> None:
    root = tmp_path
    client = RawClient(root)
    try:
        client.initialize(root)
        data = b"".join(FAULTS[i] for i in faults)
        at = 0
        for cut in cuts:  # the bytes arrive in pieces, as through a pipe
            client.write(data[at:at + cut])
            at += cut
        client.write(data[at:])
        client.alive("after")
        stderr = client.stop()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    assert "Traceback" not in stderr


def actions_at(client: RawClient, msg_id: Any, uri: str, line: int, kind: str = "quickfix") -> List[Dict[str, Any]]:
    client.send({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": uri}, "range": {"start": {"line": line, "character": 0},
                                                "end": {"line": line, "character": 80}},
        "context": {"diagnostics": [], "only": [kind]}}})
    answer = client.answer(msg_id)
    assert answer is not None and "result" in answer, answer
    return answer["result"]


def applied(text: str, action: Dict[str, Any], uri: str) -> str:
    from tests.server.test_server import apply_text_edits

    return apply_text_edits(text, [types.TextEdit(range=types.Range(
        start=types.Position(**e["range"]["start"]), end=types.Position(**e["range"]["end"])), new_text=e["newText"])
        for e in action["edit"]["changes"][uri]])


def test_a_document_over_the_size_limit_is_linted_on_open_and_save_only_and_the_user_told_once(
        tmp_path: Path) -> None:
    """Over the limit, a document is analysed in the far process (vjplint.server.far) when opened
    and saved; its code actions read that analysis: its quick fix and fix-all (edits computed
    there, as the command line's), and, once the buffer has changed, the quick fix disabled,
    saying why."""
    from tests.server.test_server import PYPROJECT, SOURCE as FIXABLE, cli_fix

    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "clip.py").write_text(FIXABLE)
    uri = (tmp_path / "clip.py").as_uri()
    client = RawClient(tmp_path)
    client.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
        "initializationOptions": {"lintOnChangeMaxSize": 100}}})
    assert client.answer("init") is not None
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": FIXABLE}}})
    publishes = lambda m: m.get("method") == "textDocument/publishDiagnostics"  # noqa: E731
    published = lambda: [(m["params"].get("version"), [d["code"] for d in m["params"]["diagnostics"]])  # noqa: E731
                         for m in client.seen if publishes(m)]
    client.wait_for(publishes)
    assert published() == [(1, ["VJP101", "VJP101"])]  # lo and hi
    expected = cli_fix(tmp_path, FIXABLE)
    line = client.seen[-1]["params"]["diagnostics"][0]["range"]["start"]["line"]
    quick = [a for a in actions_at(client, "fix", uri, line) if a["title"].startswith("VJP101: ")][0]
    assert applied(FIXABLE, quick, uri) == expected != FIXABLE
    [fix_all] = actions_at(client, "fix-all", uri, 0, "source.fixAll.vjplint")
    assert applied(FIXABLE, fix_all, uri) == expected
    for version, text in ((2, expected), (3, expected + "# more\n")):
        client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})
    stale = actions_at(client, "stale", uri, line)  # the buffer is no longer the text analysed
    assert stale[0] == {"title": quick["title"], "kind": "quickfix", "disabled": {
        "reason": "clip.py changed since its last analysis (over lintOnChangeMaxSize, it is analysed when saved): "
                  "save it for this fix"}}
    assert all("disabled" in a for a in stale)
    client.send({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}})
    client.wait_for(lambda m: publishes(m) and m["params"].get("version") == 3)
    # no lint at an edit (none of version 2), one at the save; version 1 may have been published
    # again once the folder's index was there (vjplint.server.indexing: named elsewhere?)
    assert [v for v, _ in published()][-1] == 3 and {v for v, _ in published()} == {1, 3}
    assert {(v, tuple(codes)) for v, codes in published()} == {(1, ("VJP101", "VJP101")), (3, ())}
    assert actions_at(client, "fixed", uri, line) == []
    shown = [m["params"] for m in client.seen if m.get("method") == "window/showMessage"]
    assert shown == [{"type": 3, "message": f"vjplint: clip.py is {len(FIXABLE)} characters, over "
                                            "lintOnChangeMaxSize (100): it is linted when opened and saved, "
                                            "not at each edit"}]
    debug = client.alive("debug")["result"]
    assert re.search(r"\nfar analysis: process pid \d+; requests [45], abandoned 0\n", debug), debug
    assert client.stop() == ""
