"""The decoder process (vjplint.server.far_decode.Decoder) gives what `json.loads` gives, long
strings and all; what it cannot decode, or a decoder that died, is a DecodeFailed (the server
then decodes on its event loop), and the next body starts a new decoder."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, List

import pytest

from tests.server.test_server_faults import HANG_GUARD_S
from vjplint.server.far_decode import BIG_STRING, WAIT_VARIABLE, DecodeFailed, Decoder

LONG = "".join(f"# {i}: \"q\" \\ \t café 𝜕 \u2028 \x00\n" for i in range(BIG_STRING // 20))


@pytest.mark.parametrize("value", [
    {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///w/a.py", "version": 1, "text": LONG}}},
    {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///w/a.py", "version": 2},
        "contentChanges": [{"text": LONG}, {"text": "short"}, {"text": LONG[::-1]}]}},
    LONG,  # a long string alone
    [LONG, {"a": [LONG, 1.5, None, True, -3, 1e300]}, "\ud800 lone surrogates \udfff" * BIG_STRING],
])
def test_a_decoded_body_is_what_json_loads_gives(value: Any) -> None:
    decoder = Decoder()
    try:
        for body in (json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"),
                     json.dumps(value, indent=2).encode("utf-16")):
            assert decoder.decode(body) == json.loads(body) == value
        assert decoder.decoded == 3
    finally:
        decoder.stop()


def test_what_does_not_decode_fails_and_a_dead_decoder_is_replaced(tmp_path: Path, monkeypatch: Any) -> None:
    decoder = Decoder()
    try:
        with pytest.raises(DecodeFailed, match=r"^JSONDecodeError: Unterminated string starting at: line 1 column 7 \(char 6\)$"):
            decoder.decode(b'{"a": "' + b"x" * BIG_STRING)
        with pytest.raises(DecodeFailed, match=r"^UnicodeDecodeError: "):
            decoder.decode(b'["\xff\xfe"]')
        assert decoder.decode(b'{"a": 1}') == {"a": 1}  # the same process goes on
        first = decoder.proc
        assert first is not None
        first.kill()
        first.wait()
        assert decoder.decode(b'{"a": 2}') == {"a": 2}  # a decoder found dead is started again
        second = decoder.proc
        assert second is not None and second is not first
        # one that dies while it decodes: that body fails, the next starts a third decoder
        monkeypatch.setenv(WAIT_VARIABLE, str(tmp_path / "never"))
        second.kill()
        second.wait()
        third_started = threading.Event()
        failed: List[Exception] = []

        def decode() -> None:
            try:
                decoder.decode(b'{"a": 3}')
            except DecodeFailed as exc:
                failed.append(exc)

        worker = threading.Thread(target=decode)
        real = decoder._process

        def started() -> Any:
            proc = real()
            third_started.set()
            return proc

        monkeypatch.setattr(decoder, "_process", started)
        worker.start()
        assert third_started.wait(HANG_GUARD_S)
        third = decoder.proc
        assert third is not None and third is not second
        third.kill()
        worker.join(HANG_GUARD_S)
        [exc] = failed  # (killed before or after the body was written to it)
        assert re.fullmatch(r"EOFError: the decoder ended|BrokenPipeError: .*", str(exc)), exc
        monkeypatch.delenv(WAIT_VARIABLE)
        assert decoder.decode(b'{"a": 4}') == {"a": 4}
    finally:
        decoder.stop()
    with pytest.raises(DecodeFailed, match="the server is ending"):
        decoder.decode(b"{}")
