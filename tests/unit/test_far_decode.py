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
