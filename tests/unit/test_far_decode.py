"""What the server reads of a big message before it is decoded (vjplint.server.far_decode.peek),
and a message decoded elsewhere handled as the event loop's own decode would have it
(vjplint.server.transport._hooked)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vjplint.server.far_decode import PEEK, peek
from vjplint.server.transport import _hooked

LONG = "x = 1\n" * (PEEK // 4)


def body(message: Any) -> bytes:
    return json.dumps(message).encode()


def test_a_did_open_shows_its_method_and_document_before_its_text() -> None:
    message = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///w/b%C3%A9g%20file.py", "languageId": "python", "version": 7, "text": LONG}}}
    assert peek(body(message)) == ("textDocument/didOpen", "file:///w/b%C3%A9g%20file.py", False)
    spaced = json.dumps(message, indent=3, ensure_ascii=False).encode()  # white space, raw UTF-8
    assert peek(spaced) == ("textDocument/didOpen", "file:///w/b%C3%A9g%20file.py", False)


def test_a_did_change_shows_its_document_whatever_follows() -> None:
    message = {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///w/a.py", "version": 2}, "contentChanges": [{"text": LONG}]}}
    assert peek(body(message)) == ("textDocument/didChange", "file:///w/a.py", False)


@pytest.mark.parametrize("message, expected", [
    # the text before the uri: the document cannot be known from the head
    ({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "text": LONG, "uri": "file:///w/a.py"}}}, ("textDocument/didOpen", None, False)),
    # the method after the text: neither is known
    ({"jsonrpc": "2.0", "params": {"textDocument": {"uri": "file:///w/a.py", "text": LONG}},
      "method": "textDocument/didOpen"}, (None, None, True)),
    # a request (an id): it may be what a later cancel names
    ({"jsonrpc": "2.0", "id": 4, "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///w/a.py", "text": LONG}}}, ("textDocument/didOpen", "file:///w/a.py", True)),
    # another method: its document is not taken from textDocument.uri
    ({"jsonrpc": "2.0", "method": "notebookDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///w/a.py"}, "cells": LONG}}, ("notebookDocument/didOpen", None, True)),
    # an escaped quote and a brace in a string before the text do not confuse the scan
    ({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "languageId": "py\"}{thon", "uri": "file:///w/q\".py", "text": LONG}}},
     ("textDocument/didOpen", "file:///w/q\".py", False)),
])
def test_what_the_head_cannot_show_is_not_guessed(message: Any, expected: Any) -> None:
    assert peek(body(message)) == expected


def test_not_json_shows_nothing() -> None:
    assert peek(b"\xff\xfe" + b"a" * PEEK) == (None, None, True)
    assert peek(b'{"method": textDocument/didOpen') == (None, None, True)


def test_a_decoded_value_is_hooked_as_json_loads_hooks_it() -> None:
    def hook(data: dict) -> Any:
        return ("hooked", sorted(data))

    text = json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"a": [{"b": 1}, [{"c": None}], 2.5],
                                                                  "d": {}}})
    assert _hooked(json.loads(text), hook) == json.loads(text, object_hook=hook)
    assert _hooked([1, {"x": "y"}], hook) == json.loads('[1, {"x": "y"}]', object_hook=hook)


def test_messages_read_while_a_big_one_is_decoded_go_first_only_when_about_another_document() -> None:
    """Transport.take_frame with the decoder's answer given by the test: what is dispatched at
    once, what waits, and that the waiting ones are handled after the big one, in order."""
    import asyncio
    import threading

    from vjplint.server.far_decode import BIG_FRAME
    from vjplint.server.transport import DECODED, Transport

    class Decoder:
        def __init__(self) -> None:
            self.jobs: list = []

        def submit(self, body: Any, done: Any) -> None:
            self.jobs.append((body, done))

    class Server(Transport):
        def __init__(self) -> None:
            self._stop_event = threading.Event()
            self._decoder = Decoder()
            self.handled: list = []

        def handle_frame(self, body: Any, problem: Any, decoded: Any = None) -> Any:
            message = json.loads(body) if decoded is None else decoded
            self.handled.append((message.get("method"), message.get("id")))
            return None

    def message(method: str, uri: Any = None, msg_id: Any = None, **params: Any) -> bytes:
        body: dict = {"jsonrpc": "2.0", "method": method, "params": dict(params)}
        if uri is not None:
            body["params"]["textDocument"] = {"uri": uri}
        if msg_id is not None:
            body["id"] = msg_id
        return json.dumps(body).encode()

    async def run() -> list:
        server = Server()
        server._input_chunks = asyncio.Queue()
        big = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///w/big.py", "languageId": "python", "version": 1, "text": "x" * BIG_FRAME}}}
        steps = []
        server.take_frame(json.dumps(big).encode(), None)
        server.take_frame(message("textDocument/didOpen", "file:///w/small.py"), None)  # another document: now
        server.take_frame(message("textDocument/codeAction", "file:///w/small.py", 1), None)  # now
        server.take_frame(message("$/cancelRequest", id=1), None)  # no request waits: now
        server.take_frame(message("textDocument/hover", "file:///w/b%69g.py", 2), None)  # the big one (quoted): waits
        server.take_frame(message("textDocument/codeAction", "file:///w/small.py", 3), None)  # another: now
        server.take_frame(message("$/cancelRequest", id=2), None)  # request 2 waits: so does its cancel
        server.take_frame(message("workspace/executeCommand", msg_id=4), None)  # no document: waits
        server.take_frame(message("textDocument/codeAction", "file:///w/small.py", 5), None)  # after that: waits
        steps.append(list(server.handled))
        [(body, done)] = server._decoder.jobs
        done(json.loads(body), None)  # decoded: handled on the event loop's next turn, then what waited
        assert await server._input_chunks.get() is DECODED
        server.release_held()
        steps.append(server.handled[len(steps[0]):])
        server.take_frame(message("textDocument/codeAction", "file:///w/big.py", 6), None)  # nothing waits
        steps.append(server.handled[-1:])
        return steps

    before, after, last = asyncio.run(run())
    assert before == [("textDocument/didOpen", None), ("textDocument/codeAction", 1), ("$/cancelRequest", None),
                      ("textDocument/codeAction", 3)]
    assert after == [("textDocument/didOpen", None), ("textDocument/hover", 2), ("$/cancelRequest", None),
                     ("workspace/executeCommand", 4), ("textDocument/codeAction", 5)]
    assert last == [("textDocument/codeAction", 6)]
