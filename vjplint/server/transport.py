"""Messages in and out: vjplint's reader in place of pygls' (vjplint.server.framing), pygls'
protocol where it would leave a request unanswered or a bad edit applied, publishDiagnostics
written directly."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from collections import deque
from urllib.parse import unquote
from typing import Any, Deque, Dict, List, Optional, Sequence, Union

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from vjplint.server import edits
from vjplint.server.far_decode import BIG_FRAME, Decoder, peek
from vjplint.server.framing import PIPE_BYTES, Frames, request_id, widen_pipe

log = logging.getLogger("vjplint.server")


class _Dropped:
    """What an undecodable message becomes once answered: pygls ignores it (not JSON-RPC 2.0)."""

    jsonrpc = "dropped"


class VjplintProtocol(LanguageServerProtocol):
    """pygls logs a request whose params do not decode and never answers it; JSON-RPC wants an
    error response, and a client waiting for one would hang."""

    def structure_message(self, data: Dict[str, Any]) -> Any:
        if isinstance(data, dict) and "jsonrpc" in data and "id" in data and (
                isinstance(data["id"], bool) or not isinstance(data["id"], (int, str, type(None)))):
            raise JsonRpcInvalidRequest(f"an id must be a number or a string, not {type(data['id']).__name__}")
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            if "params" not in data:  # optional in JSON-RPC, required by pygls' generic request type
                try:
                    return super().structure_message({**data, "params": None})
                except JsonRpcException:
                    pass
            cause = exc.__cause__ or exc
            error = JsonRpcInvalidParams(f"invalid params for {data.get('method')!r}: "
                                         f"{type(cause).__name__}: {cause}")
            log.warning("request %r from the client answered with an error: %s", data["id"], error.message)
            self._send_response(data["id"], error=error.to_response_error())
            return _Dropped()

    @property
    def plain_texts(self) -> Dict[str, str]:
        """uri -> the text of a big document known to be `edits.plain` (the same object)."""
        if not hasattr(self, "_plain_texts"):
            self._plain_texts: Dict[str, str] = {}
        return self._plain_texts

    def handle_message(self, message: Any) -> None:
        """pygls drops every request after `shutdown` unanswered; LSP answers them InvalidRequest."""
        msg_id, method = getattr(message, "id", None), getattr(message, "method", None)
        if self._shutdown and method is not None and method != types.EXIT and msg_id is not None:
            log.info("request %r (%s) after shutdown, answered InvalidRequest", msg_id, method)
            self._send_response(msg_id, error=JsonRpcInvalidRequest(
                f"the server is shut down: {method!r} is not served (only 'exit' is)").to_response_error())
            return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        """pygls' own, for documents that are open and edits that fit: a change to a document
        never opened is ignored (pygls raised KeyError), and a range beyond the document is
        clamped to it, as LSP says of positions past a line's end (pygls dropped or garbled it),
        each said in one line."""
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            log.warning("textDocument/didChange for a document that is not open, ignored: %s", uri)
            return
        document = self.workspace.get_text_document(uri)
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial) and len(document.source) >= edits.MIN_CHARS:
                changed = edits.apply(document.source, change.range.start, change.range.end, change.text,
                                      _encoding(self.workspace), self.plain_texts.get(uri) is document.source)
                if changed is not None:  # a big document: without splitting it into lines (vjplint.server.edits)
                    document._source = changed
                    document.version = params.text_document.version
                    if not any(ch in change.text for ch in edits.OTHER_BREAKS):
                        self.plain_texts[uri] = changed  # still plain: not checked again at the next edit
                    continue
            if isinstance(change, types.TextDocumentContentChangePartial):
                clamped = _clamped(document.lines, change.range, document.position_codec)
                if clamped != change.range:
                    log.warning("textDocument/didChange: the range %s is outside %s (%d lines); applied as %s",
                                _range_text(change.range), uri, len(document.lines), _range_text(clamped))
                    change = types.TextDocumentContentChangePartial(range=clamped, text=change.text)
            self.workspace.update_text_document(params.text_document, change)
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None


class Transport:
    """Mixed into VjplintServer: reading the client's bytes, writing diagnostics."""

    def start_io(self, stdin: Any = None, stdout: Any = None) -> int:
        """Serve over stdio, with vjplint's reader (`vjplint.server.framing`) in place of
        pygls': a broken frame is logged in one line, answered when it holds a request, and
        the next message is read as usual. Returns the exit code (LSP): 0 at `exit` after
        `shutdown` and at the end of input between messages, 1 at `exit` without `shutdown`
        and at the end of input in the middle of a message."""
        import sys

        from pygls.io_ import StdoutWriter

        self._stop_event = threading.Event()
        self.exit_code = 0
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self.read_messages(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            log.error("the client closed the connection")
        except SystemExit as exc:  # pygls' `exit`: 1 unless `shutdown` came first
            self.exit_code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except KeyboardInterrupt:
            pass
        finally:
            self.far.stop()  # a big document's analysis nobody will read
            self.decoder.stop()
            self.shutdown()
        return self.exit_code

    async def read_messages(self, stream: Any) -> None:
        loop = asyncio.get_running_loop()
        chunks: "asyncio.Queue[bytes]" = asyncio.Queue()
        read = getattr(stream, "read1", stream.read)
        size = PIPE_BYTES if widen_pipe(stream) else 1 << 16  # a 10 MB didOpen in 10 reads, not 160

        def reader() -> None:  # a thread: stdin has no portable non-blocking read
            while True:
                try:
                    chunk = read(size)
                except (OSError, ValueError):
                    chunk = b""
                try:
                    loop.call_soon_threadsafe(chunks.put_nowait, chunk)
                except RuntimeError:  # the loop is closed: the server is ending
                    return
                if not chunk:
                    return

        threading.Thread(target=reader, name="vjplint-stdin", daemon=True).start()
        self._input_chunks = chunks
        frames = Frames()
        owed = None  # what the last frame taken short after a pause was read as (Frames.settled)
        while not self._stop_event.is_set():
            paused = False
            try:
                if frames.waiting:
                    chunk = await asyncio.wait_for(chunks.get(), FRAME_PAUSE_S)
                else:
                    chunk = await chunks.get()
                if chunk is DECODED:  # a big message is decoded (`take_frame`): what waited for it goes on
                    self.release_held()
                    continue
                frames.feed(chunk)
            except asyncio.TimeoutError:
                paused = True
            while not self._stop_event.is_set():
                frame = frames.next(paused)
                late = frames.settled()
                if late is not None:
                    log.warning("broken message from the client: %s; read as %s", late, owed)
                if frame is None:
                    break
                read_as = self.take_frame(frame.body, frame.problem)
                owed = read_as if frame.owed else owed
            if frames.eof:
                if frames.waiting:  # LSP: the client is gone without `exit`; here mid-message
                    log.warning("the client's input ended in the middle of a message (%d bytes held)",
                                len(frames.buf))
                    self.exit_code = 1
                while self.held and not self._stop_event.is_set():  # what was read is still handled
                    if await chunks.get() is DECODED:
                        self.release_held()
                return

    # -- big messages decoded far (vjplint.server.far_decode) -------------------------------------
    @property
    def decoder(self) -> Decoder:
        if not hasattr(self, "_decoder"):
            self._decoder = Decoder()
        return self._decoder

    @property
    def held(self) -> Deque["_Held"]:
        """The messages read after a big one still being decoded, that wait for it, in order."""
        if not hasattr(self, "_held"):
            self._held: Deque[_Held] = deque()
        return self._held

    def take_frame(self, body: Union[bytes, bytearray], problem: Optional[str]) -> Optional[str]:
        """Handle one message, or hold it: a body of BIG_FRAME bytes or more is decoded in the
        decoder process, off the event loop; a message read while one is is dispatched at once
        if it is about another document (textDocument/..., or a cancel while no request waits),
        else held until the messages before it are handled. Returns what it was read as."""
        if len(body) < BIG_FRAME and not self.held:
            return self.handle_frame(body, problem)
        if len(body) >= BIG_FRAME:
            method, uri, request = peek(body)
            entry = _Held(body, problem, uri, request, ready=False)
            self.held.append(entry)
            loop = asyncio.get_running_loop()
            self.decoder.submit(body, lambda value, why: self._decoded(entry, loop, value, why))
            return f"{method!r}" if method is not None else "a message"
        try:
            plain: Any = json.loads(body)
        except ValueError:
            plain = _UNDECODED
        method = plain.get("method") if isinstance(plain, dict) else None
        uri = _document_uri(plain, method)
        if self._may_overtake(method, uri):
            return self.handle_frame(body, problem, plain)
        self.held.append(_Held(body, problem, uri, not isinstance(plain, dict) or "id" in plain, True, plain))
        return _describe_plain(plain)

    def _may_overtake(self, method: Any, uri: Optional[str]) -> bool:
        if method == "$/cancelRequest":  # its request was dispatched already, unless one is held
            return not any(entry.request for entry in self.held)
        if uri is None:
            return False
        uri = unquote(uri)
        return all(entry.uri is not None and unquote(entry.uri) != uri for entry in self.held)

    def _decoded(self, entry: "_Held", loop: asyncio.AbstractEventLoop, value: Any, why: Optional[str]) -> None:
        """In the decoder's thread: `entry`'s body is decoded (`value`), or could not be (`why`)."""
        if why is None:
            entry.message = value
            entry.body = bytes(entry.body[:800])  # (what handle_frame may quote of it)
        else:
            log.info("a %d-byte message is decoded in the server instead: %s", len(entry.body), why)
        entry.ready = True
        try:
            loop.call_soon_threadsafe(self._input_chunks.put_nowait, DECODED)
        except RuntimeError:  # the loop is closed: the server is ending
            pass

    def release_held(self) -> None:
        """Handle the held messages, in order, up to the first still being decoded."""
        while self.held and self.held[0].ready and not self._stop_event.is_set():
            entry = self.held.popleft()
            self.handle_frame(entry.body, entry.problem, entry.message)

    def handle_frame(self, body: Union[bytes, bytearray], problem: Optional[str],
                     decoded: Any = None) -> Optional[str]:
        """Decode and dispatch one message; what cannot be is logged in one line, and a request
        whose id can be read gets an error answer (JSON-RPC's parse error). `decoded`: the
        body's JSON value, when it was decoded already (`take_frame`). Returns what the
        message was read as (None: not a message)."""
        from pygls.exceptions import JsonRpcParseError

        broken = f"broken message from the client: {problem}" if problem is not None else None
        if decoded is None and (not body or body.isspace()):  # (not `strip`: a copy of a body of megabytes)
            log.warning("%s", broken or "an empty message from the client")
            return
        try:
            if decoded is None or decoded is _UNDECODED:
                message = json.loads(body, object_hook=self.protocol.structure_message)
            else:
                message = _hooked(decoded, self.protocol.structure_message)
        except ValueError as exc:  # not JSON, or not UTF-8
            msg_id = request_id(body)
            log.warning("%s%s", f"{broken}; " if broken else "", f"unreadable message from the client "
                        f"({_first_line(exc)})" + (f", answered as an error to request {msg_id!r}"
                                                  if msg_id is not None else ""))
            if msg_id is not None:
                self.protocol._send_response(msg_id, error=JsonRpcParseError(
                    f"vjplint could not read this message: {_first_line(exc)}").to_response_error())
            return
        except Exception as exc:  # noqa: BLE001 (the server goes on)
            cause = (exc.__cause__ or exc) if isinstance(exc, JsonRpcException) else exc
            log.warning("%smessage from the client not understood: %s: %s", f"{broken}; " if broken else "",
                        type(cause).__name__, _first_line(cause))
            return
        read_as = _describe(message)
        if broken:
            log.warning("%s; read as %s", broken, read_as)
        if isinstance(message, _Dropped):  # answered already (invalid params)
            return read_as
        if not hasattr(message, "jsonrpc"):
            log.warning("message from the client is not JSON-RPC 2.0: %.200s", bytes(body[:800]).decode("utf-8", "replace"))
            return None
        try:
            self.protocol.handle_message(message)
        except Exception as exc:  # noqa: BLE001
            log.warning("message from the client failed: %s: %s", type(exc).__name__, _first_line(exc))
        return read_as

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log, rather than pop up a message for every bad message a client sends."""
        log.error("%s: %s", getattr(source, "__name__", source), error)
    def publish(self, uri: str, version: Optional[int], diagnostics: List[Dict[str, Any]]) -> None:
        """publishDiagnostics written as JSON directly: through lsprotocol's classes and back
        (cattrs) costs more than the lint of an edit on a large file."""
        writer = getattr(self.protocol, "writer", None)
        if writer is None:
            return
        params: Dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
        if version is not None:
            params["version"] = version
        body = json.dumps({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
                           "params": params}).encode("utf-8")
        written = writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        if inspect.isawaitable(written):  # pygls' asyncio writers
            asyncio.ensure_future(written)


FRAME_PAUSE_S = 0.2  # a broken frame is taken as whole once the client sends nothing this long
DECODED = object()  # put among the input's chunks when a big message is decoded (Transport._decoded)
_UNDECODED = object()  # a held body that did not decode as JSON: handle_frame decodes it and says why


class _Held:
    """A message waiting for a big one before it to be decoded (or that big one)."""

    __slots__ = ("body", "problem", "uri", "request", "ready", "message")

    def __init__(self, body: Union[bytes, bytearray], problem: Optional[str], uri: Optional[str], request: bool,
                 ready: bool, message: Any = None) -> None:
        self.body, self.problem, self.uri, self.request = body, problem, uri, request
        self.ready, self.message = ready, message  # message: its JSON value once decoded (None: not)


def _hooked(value: Any, hook: Any) -> Any:
    """What `json.loads(..., object_hook=hook)` gives for a JSON value already decoded."""
    if isinstance(value, dict):
        return hook({key: _hooked(item, hook) for key, item in value.items()})
    if isinstance(value, list):
        return [_hooked(item, hook) for item in value]
    return value


def _document_uri(plain: Any, method: Any) -> Optional[str]:
    """The document a textDocument/... message is about, else None."""
    if not (isinstance(method, str) and method.startswith("textDocument/")):
        return None
    params = plain.get("params")
    document = params.get("textDocument") if isinstance(params, dict) else None
    uri = document.get("uri") if isinstance(document, dict) else None
    return uri if isinstance(uri, str) else None


def _describe_plain(plain: Any) -> str:
    if not isinstance(plain, dict):
        return "something else"
    method, msg_id = plain.get("method"), plain.get("id")
    if isinstance(method, str):
        return f"{method!r}" + (f" (request {msg_id!r})" if msg_id is not None else "")
    return "a response" if msg_id is not None else "something else"


def _first_line(exc: Any) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _describe(message: Any) -> str:
    method, msg_id = getattr(message, "method", None), getattr(message, "id", None)
    if method is not None:
        return f"{method!r}" + (f" (request {msg_id!r})" if msg_id is not None else "")
    return "a response" if msg_id is not None else "something else"


def _clamped(lines: Sequence[str], rng: types.Range, codec: Any) -> types.Range:
    """`rng` within the document: lines past the end go to its end, characters past a line's end
    to that end (LSP), and a start after the end swaps with it."""

    def clamp(pos: types.Position) -> types.Position:
        line = min(max(pos.line, 0), len(lines))
        if line == len(lines):
            return types.Position(line=line, character=0)
        width = codec.client_num_units(lines[line].rstrip("\r\n"))
        return types.Position(line=line, character=min(max(pos.character, 0), width))

    start, end = clamp(rng.start), clamp(rng.end)
    if (start.line, start.character) > (end.line, end.character):
        start, end = end, start
    return types.Range(start=start, end=end)


def _encoding(workspace: Any) -> str:
    value = getattr(workspace, "position_encoding", None)
    return str(getattr(value, "value", value) or "utf-16")


def _range_text(rng: types.Range) -> str:
    return f"{rng.start.line}:{rng.start.character}-{rng.end.line}:{rng.end.character}"
