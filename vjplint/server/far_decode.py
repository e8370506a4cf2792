"""A big message decoded in a process of its own, so that no request waits behind its decode.

A 10 MB `didOpen` costs the server's interpreter about 20 ms of `json.loads` (CPU; on a loaded
2-CPU machine that is 200-300 ms of wall time), and a small document's request read just after
it waited for that decode before it was even dispatched (docs/performance.md, issue 48). So a
message body of BIG_FRAME bytes or more is not decoded on the event loop: its raw bytes go to
the decoder process (`DECODER`, a few lines of the standard library, started on first use),
which decodes them and sends back the message with its long strings (a document's text) left
out, then each of those strings as UTF-8 bytes; the server decodes those bytes (0.5 ms for
10 MB: no escapes to read) and puts them back. Meanwhile the messages read after it that are
about another document are dispatched at once; the others wait, in order (vjplint.server.
transport), and the message is handled as if it had been decoded on the loop.

- What the server needs to know before the decode, which document the message is about, it
  reads from the body's head (`peek`): the method and `params.textDocument.uri`, if they come
  before the text (they do from every client seen; otherwise every later message waits).
- A decode that fails (the decoder died, the body is not JSON) is done again on the event loop,
  which says what was wrong exactly as for any message.
- `VJPLINT_DECODE_WAIT_FOR=PATH` (tests): the decoder starts each decode once PATH exists, so a
  test holds a big message's decode as long as it needs, whatever the machine's speed.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import struct
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from vjplint.server.framing import widen_pipe

log = logging.getLogger("vjplint.server")

BIG_FRAME = 1 << 20  # bytes: a message body this long is decoded in the decoder process
BIG_STRING = 1 << 15  # characters: a string this long comes back beside the message, as UTF-8 bytes
PEEK = 1 << 12  # bytes of a big body's head read for its method and document
WAIT_VARIABLE = "VJPLINT_DECODE_WAIT_FOR"
_LENGTH = struct.Struct("!Q")

# The decoder: the standard library only (`-I -S`: no site, no user's modules; it starts in a few
# milliseconds of its own CPU). In: length-prefixed bodies. Out, per body: a length-prefixed JSON
# header, {"message": ..., "paths": [[key, ...], ...]} (each path a long string's place, left
# empty in the message) or {"error": "..."}, then each long string's length-prefixed UTF-8 bytes.
DECODER = r"""
import json, os, struct, sys, time
L = struct.Struct("!Q")
BIG = int(sys.argv[1])
inp, out = sys.stdin.buffer, sys.stdout.buffer

def read(n):
    data = inp.read(n)
    if len(data) < n:
        sys.exit(0)
    return data

def pull(value, path, paths, texts):
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str) and len(item) >= BIG:
            paths.append(path + [key])
            texts.append(item)
            value[key] = ""
        elif isinstance(item, (dict, list)):
            pull(item, path + [key], paths, texts)

while True:
    body = read(L.unpack(read(L.size))[0])
    wait = os.environ.get("VJPLINT_DECODE_WAIT_FOR")
    while wait and not os.path.exists(wait):
        time.sleep(0.02)
    paths, texts = [], []
    try:
        message = json.loads(body)
        if isinstance(message, str) and len(message) >= BIG:
            paths, texts, message = [[]], [message], ""
        else:
            pull(message, [], paths, texts)
        head = json.dumps({"message": message, "paths": paths}).encode()
        blobs = [text.encode("utf-8", "surrogatepass") for text in texts]
    except Exception as exc:
        head, blobs = json.dumps({"error": type(exc).__name__ + ": " + str(exc)}).encode(), []
    del body
    out.write(L.pack(len(head)) + head)
    for blob in blobs:
        out.write(L.pack(len(blob)))
        out.write(blob)
    out.flush()
"""


class DecodeFailed(Exception):
    """The decoder died or could not decode this body (the event loop decodes it instead)."""


class Decoder:
    """The server's side: one decoder process, one body at a time, from one thread of the server
    (`submit`), started with the first body."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: Optional[subprocess.Popen] = None
        self.closed = False
        self.decoded = 0
        self.jobs: "queue.SimpleQueue[Optional[Tuple[Union[bytes, bytearray], Callable[[Any, Optional[str]], None]]]]" = \
            queue.SimpleQueue()
        self.thread: Optional[threading.Thread] = None

    def submit(self, body: Union[bytes, bytearray], done: Callable[[Any, Optional[str]], None]) -> None:
        """Decode `body` in the decoder's thread, then call `done(value, None)` there, or
        `done(None, why)` when it could not be decoded that way."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._work, name="vjplint-decode", daemon=True)
            self.thread.start()
        self.jobs.put((body, done))

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            body, done = job
            del job
            try:
                value, why = self.decode(body), None
            except DecodeFailed as exc:
                value, why = None, str(exc)
            del body
            done(value, why)

    def decode(self, body: Union[bytes, bytearray]) -> Any:
        """The JSON value of `body`, as `json.loads(body)` gives it (called in a thread)."""
        with self.lock:
            proc = self._process()
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(_LENGTH.pack(len(body)))
                proc.stdin.write(body)
                proc.stdin.flush()
                head = json.loads(_read(proc.stdout, _read_length(proc.stdout)))
                if "error" in head:
                    raise DecodeFailed(head["error"])
                texts = [str(_read(proc.stdout, _read_length(proc.stdout)), "utf-8", "surrogatepass")
                         for _ in head["paths"]]
            except DecodeFailed:
                raise
            except Exception as exc:  # a dead process, a broken pipe, an answer that does not load
                self._kill()
                raise DecodeFailed(f"{type(exc).__name__}: {exc}") from exc
            self.decoded += 1
        message = head["message"]
        for path, text in zip(head["paths"], texts):
            if not path:
                return text
            place = message
            for key in path[:-1]:
                place = place[key]
            place[path[-1]] = text
        return message

    def _process(self) -> subprocess.Popen:
        if self.closed:
            raise DecodeFailed("the server is ending")
        if self.proc is None or self.proc.poll() is not None:
            try:
                self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", DECODER, str(BIG_STRING)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            except OSError as exc:
                raise DecodeFailed(f"cannot start a process: {exc}") from exc
            widen_pipe(self.proc.stdin)
            widen_pipe(self.proc.stdout)
        return self.proc

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.kill()
                proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass

    def stop(self) -> None:
        self.closed = True
        self.jobs.put(None)
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.stdin.close()  # type: ignore[union-attr]  (it ends at end of input)
                proc.wait(2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                try:
                    proc.kill()
                    proc.wait(2)
                except (OSError, subprocess.TimeoutExpired):
                    pass


def _read_length(stream: Any) -> int:
    return _LENGTH.unpack(_read(stream, _LENGTH.size))[0]


def _read(stream: Any, n: int) -> bytes:
    data = stream.read(n)
    if len(data) < n:
        raise EOFError("the decoder ended")
    return data


# -- what a big body is about, from its head ------------------------------------------------------
DOCUMENT_METHODS = ("textDocument/didOpen", "textDocument/didChange")
_TOKEN = re.compile(r'\s*(?:([{}\[\]:,])|("(?:[^"\\\x00-\x1f]|\\.)*")|'
                    r'(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null))')


def peek(body: Union[bytes, bytearray]) -> Tuple[Optional[str], Optional[str], bool]:
    """(method, document uri, may be a request) of a big body, from the scalars its first PEEK
    bytes hold (the document's text, which follows them, is never read): the uri only for
    `textDocument/didOpen`/`didChange`, None where it cannot be known that way."""
    head = bytes(body[:PEEK]).decode("utf-8", "replace")
    seen: Dict[Tuple[Any, ...], Any] = {}
    path: List[Any] = []
    kinds: List[str] = []
    expect_key = False
    at = 0
    while True:
        match = _TOKEN.match(head, at)
        if match is None:
            break  # the long string (or something that is not JSON): the rest is not read
        at = match.end()
        punct, string, scalar = match.groups()
        if punct in ("{", "["):
            kinds.append(punct)
            path.append(None)
            expect_key = punct == "{"
        elif punct in ("}", "]"):
            if not kinds:
                break
            kinds.pop()
            path.pop()
            if not kinds:
                break
        elif punct == ",":
            expect_key = bool(kinds) and kinds[-1] == "{"
        elif punct == ":":
            continue
        else:
            try:
                value = json.loads(string if string is not None else scalar)
            except ValueError:
                break
            if expect_key and string is not None:
                path[-1] = value
                expect_key = False
            else:
                seen[tuple(path)] = value
    method = seen.get(("method",))
    method = method if isinstance(method, str) else None
    request = ("id",) in seen or method not in DOCUMENT_METHODS  # (LSP: those two are notifications)
    uri = seen.get(("params", "textDocument", "uri"))
    if method not in DOCUMENT_METHODS or not isinstance(uri, str):
        uri = None
    return method, uri, request
