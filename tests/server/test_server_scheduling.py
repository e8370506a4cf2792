"""Work is scheduled per document: while a big document's analysis runs (held in the far
process until the test lets it go: VJPLINT_FAR_WAIT_FOR, so no machine is too slow for this),
another document is linted and its code actions answered, and a request on the big document is
cancelled with an answer at once. Everything asserted happens before the analysis is let go."""

from __future__ import annotations

import json
from pathlib import Path

from tests.server.test_server_faults import SOURCE, RawClient, frame


def test_a_big_documents_analysis_delays_no_other_document_and_a_cancel_is_answered_meanwhile(
        tmp_path: Path) -> None:
    go = tmp_path / "go"  # the far process starts the big document's lint once this exists
    big_text = SOURCE + "".join(f"x_{i} = {i}\n" for i in range(200))
    (tmp_path / "big.py").write_text(big_text)
    (tmp_path / "small.py").write_text(SOURCE)
    big, small = (tmp_path / "big.py").as_uri(), (tmp_path / "small.py").as_uri()
    client = RawClient(tmp_path, env={"VJPLINT_FAR_WAIT_FOR": str(go)})
    client.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
        "initializationOptions": {"lintOnChangeMaxSize": len(SOURCE) + 100}}})  # big.py is over it
    assert client.answer("init") is not None
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    for uri, text in ((big, big_text), (small, SOURCE)):
        client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    publishes = lambda uri: lambda m: (m.get("method") == "textDocument/publishDiagnostics"  # noqa: E731
                                       and m["params"]["uri"] == uri)
    # the small document is linted, and its code actions answered, while the big one waits
    [found] = client.wait_for(publishes(small))
    assert [d["code"] for d in found["params"]["diagnostics"]] == ["VJP305"]
    client.send({"jsonrpc": "2.0", "id": "small", "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": small}, "range": {"start": {"line": 9, "character": 0},
                                                  "end": {"line": 9, "character": 20}},
        "context": {"diagnostics": [], "only": ["quickfix"]}}})
    assert [a["title"] for a in client.answer("small")["result"]] == ["Disable VJP305 for this line"]
    # a fix-all of the big document waits for its analysis: cancelled, it is answered at once
    client.send({"jsonrpc": "2.0", "id": "fix-all", "method": "workspace/executeCommand", "params": {
        "command": "vjplint.applyAutofix", "arguments": [{"uri": big}]}})
    client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "fix-all"}})
    assert client.answer("fix-all")["error"]["code"] == -32800  # RequestCancelled
    # the big document's code actions meanwhile: none yet (its analysis has not come)
    client.send({"jsonrpc": "2.0", "id": "big", "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": big}, "range": {"start": {"line": 9, "character": 0},
                                                "end": {"line": 9, "character": 20}},
        "context": {"diagnostics": [], "only": ["quickfix"]}}})
    assert client.answer("big") == {"jsonrpc": "2.0", "id": "big", "result": []}
    assert not [m for m in client.seen if publishes(big)(m)]  # all of the above before its analysis
    go.write_text("")
    [found] = client.wait_for(publishes(big))
    assert [d["code"] for d in found["params"]["diagnostics"]] == ["VJP305"]
    assert client.stop() == ""


def test_a_big_document_under_the_size_limit_delays_no_small_documents_lint(tmp_path: Path) -> None:
    """A document over BIG_LINT_CHARS but under `lintOnChangeMaxSize` is linted in the big lint
    thread (held there until the test lets it go: VJPLINT_BIG_LINT_WAIT_FOR), so a small document
    opened after it is linted, and its code action answered, while it waits; then it is linted
    as before, and so is an edit of it (up to the limit: at each change)."""
    from vjplint.server.analysis import BIG_LINT_CHARS

    go = tmp_path / "go"
    big_text = SOURCE + "".join(f"x_{i} = {i}\n" for i in range(BIG_LINT_CHARS // 10))
    assert len(big_text) > BIG_LINT_CHARS
    (tmp_path / "big.py").write_text(big_text)
    (tmp_path / "small.py").write_text(SOURCE)
    big, small = (tmp_path / "big.py").as_uri(), (tmp_path / "small.py").as_uri()
    client = RawClient(tmp_path, env={"VJPLINT_BIG_LINT_WAIT_FOR": str(go)})
    client.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
        "initializationOptions": {"lintOnChangeMaxSize": len(big_text) + 100}}})  # big.py is under it
    assert client.answer("init") is not None
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    for uri, text in ((big, big_text), (small, SOURCE)):
        client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    publishes = lambda uri: lambda m: (m.get("method") == "textDocument/publishDiagnostics"  # noqa: E731
                                       and m["params"]["uri"] == uri)
    [found] = client.wait_for(publishes(small))
    assert [d["code"] for d in found["params"]["diagnostics"]] == ["VJP305"]
    client.send({"jsonrpc": "2.0", "id": "small", "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": small}, "range": {"start": {"line": 9, "character": 0},
                                                  "end": {"line": 9, "character": 20}},
        "context": {"diagnostics": [], "only": ["quickfix"]}}})
    assert [a["title"] for a in client.answer("small")["result"]] == ["Disable VJP305 for this line"]
    assert not [m for m in client.seen if publishes(big)(m)]  # all of the above before its lint
    go.write_text("")
    [found] = client.wait_for(publishes(big))
    assert [d["code"] for d in found["params"]["diagnostics"]] == ["VJP305"]
    assert found["params"]["version"] == 1
    # an edit of it is linted at once (it is under the limit): a second VJP305 finding goes away
    client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": big, "version": 2}, "contentChanges": [{"text": "x = 1\n" + big_text[len(SOURCE):]}]}})
    [found] = client.wait_for(lambda m: publishes(big)(m) and m["params"].get("version") == 2)
    assert found["params"]["diagnostics"] == []
    assert client.stop() == ""


def _big_text(prefix: str) -> str:
    """A document over the default size limit and BIG_FRAME (its didOpen is decoded far): a
    prefix with what JSON escapes and UTF-16 counts twice, SOURCE (one VJP305), comments."""
    from vjplint.server.far_decode import BIG_FRAME

    filler = "".join(f"# line {i}: \"quoted\" \\ back\tslash, café, 𝜕x\n" for i in range(BIG_FRAME // 30))
    text = prefix + SOURCE + filler
    assert len(text) > 1_000_000 and len(json.dumps(text)) > BIG_FRAME
    return text


def test_a_big_message_is_decoded_off_the_event_loop_and_only_messages_on_its_document_wait(
        tmp_path: Path) -> None:
    """The big document's didOpen is decoded in the decoder process (held there until the test
    lets it go: VJPLINT_DECODE_WAIT_FOR): meanwhile a small document is opened, linted and its
    code action answered; the messages on the big document (a code action, an edit, a save)
    wait, and are handled after its didOpen, in order: the save's diagnostics are the edited
    text's. Decoded on the event loop, the big document's code action would be answered first."""
    go = tmp_path / "go"
    prefix = 's = "tab\\there, quote \\" and 𝜕"  # é\n'
    big_text = _big_text(prefix)
    (tmp_path / "big.py").write_text(big_text)
    (tmp_path / "small.py").write_text(SOURCE)
    big, small = (tmp_path / "big.py").as_uri(), (tmp_path / "small.py").as_uri()
    client = RawClient(tmp_path, env={"VJPLINT_DECODE_WAIT_FOR": str(go)})
    client.initialize(tmp_path)
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": big, "languageId": "python", "version": 1, "text": big_text}}})
    action = lambda msg_id, uri, line: {  # noqa: E731
        "jsonrpc": "2.0", "id": msg_id, "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": uri}, "range": {"start": {"line": line, "character": 0},
                                                    "end": {"line": line, "character": 20}},
            "context": {"diagnostics": [], "only": ["quickfix"]}}}
    client.send(action("big", big, 1000))  # (a comment line: no action, whenever its analysis comes)
    client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": big, "version": 2}, "contentChanges": [{
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "\n"}]}})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": big}}})
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": small, "languageId": "python", "version": 1, "text": SOURCE}}})
    client.send(action("small", small, 9))
    publishes = lambda uri: lambda m: (m.get("method") == "textDocument/publishDiagnostics"  # noqa: E731
                                       and m["params"]["uri"] == uri)
    assert [a["title"] for a in client.answer("small")["result"]] == ["Disable VJP305 for this line"]
    [found] = client.wait_for(publishes(small))
    [small_finding] = found["params"]["diagnostics"]
    # nothing on the big document yet: its messages wait for its didOpen's decode
    assert not [m for m in client.seen if publishes(big)(m) or m.get("id") == "big"]
    go.write_text("")
    assert client.answer("big")["result"] == []
    [found] = client.wait_for(lambda m: publishes(big)(m) and m["params"].get("version") == 2)
    [finding] = found["params"]["diagnostics"]
    assert finding["code"] == "VJP305"
    for end in ("start", "end"):  # the edited text's finding: one line below the small one's, plus the prefix
        assert finding["range"][end] == {"line": small_finding["range"][end]["line"] + 2,
                                         "character": small_finding["range"][end]["character"]}
    assert client.stop() == ""


def test_a_big_message_that_is_not_json_is_answered_as_any_unreadable_one_and_the_server_goes_on(
        tmp_path: Path) -> None:
    """A big body the decoder cannot read is read on the event loop, which answers it with a
    parse error as it does any (vjplint.server.transport.handle_frame); the messages after it
    wait for it, then go on (shutdown, exit)."""
    from vjplint.server.far_decode import BIG_FRAME

    client = RawClient(tmp_path)
    client.initialize(tmp_path)
    client.write(frame(b'{"jsonrpc": "2.0", "id": "bad", "method": "textDocument/hover", "params": "'
                       + b"x" * BIG_FRAME))  # a string never closed
    assert client.answer("bad")["error"]["code"] == -32700  # type: ignore[index]
    client.alive("after")
    stderr = client.stop()
    assert stderr == "vjplint server: warning: unreadable message from the client (Unterminated string starting " \
                     "at: line 1 column 75 (char 74)), answered as an error to request 'bad'\n"
