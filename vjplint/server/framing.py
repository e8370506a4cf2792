"""The client's byte stream cut into messages, surviving broken frames.

pygls' reader trusts every `Content-Length` header: one that is not a number, missing, negative,
too small or too large leaves it reading bodies as headers (or waiting for bytes that never come),
and the server answers nothing again. `Frames` resynchronises instead, on a fact of the format:
a JSON body cannot hold a raw line break inside a string, nor a bare word outside one, so
`Content-Length: <digits>` followed by a line break inside a body is always the next message's
header, never content. A frame is then cut at the next header whatever its own header said, and
a body whose length is unknown (a bad header, none) or overstated, with nothing after it, is taken
once the client pauses and what arrived parses as JSON. A body taken short that way is not said
to be broken until more bytes show it: a correct frame whose body ends in white space that the
client sent after a pause (it counts in Content-Length, and JSON allows it) is completed by them
(`owed`), and only what is not white space, or the end of input, before they are all in shows
that the header overstated the body (`settled`).

Pure bytes in, events out (`feed`, `next`); `vjplint.server.transport` reads stdin in a thread
and hands each event to pygls' protocol.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

HEADER_NAME = re.compile(rb"[A-Za-z][A-Za-z0-9-]*:")
HEADER_LINE = re.compile(rb"([A-Za-z][A-Za-z0-9-]*):[ \t]*([^\r\n]*?)[ \t]*\Z")
HEADER_END = re.compile(rb"\r?\n\r?\n")
BOUNDARY = re.compile(rb"Content-Length:[ \t]*\d+[ \t]*\r?\n")
PARTIAL = re.compile(rb"Content-Length:[ \t]*\d*[ \t]*\r?")
RESCAN = 64  # a header line cut by a chunk's end is searched again
MARK = b"Content-Length:"
ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\\r\n]|\\.)*")')
MAX_HEADER = 4096  # a header block longer than this is not one
WHITE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() strips (as `buf[i]` gives them)
CLOSERS = frozenset(b"}]")


@dataclass
class Frame:
    """A message body; `problem` says what was wrong with its frame (None: nothing); `owed`: the
    frame was taken after a pause, this many bytes short of its Content-Length (Frames.settled
    says later whether they came)."""

    body: Union[bytes, bytearray]  # (a big body is the bytearray it arrived in: no copy)
    problem: Optional[str] = None
    owed: int = 0


class Frames:
    def __init__(self) -> None:
        self.buf = bytearray()
        self.eof = False
        self.scanned = 0  # where the search for the next header within the current body resumes
        self.owed = 0  # white space the last frame, taken after a pause, may still get (Frame.owed)
        self.owed_problem: Optional[str] = None  # what is said if it does not
        self.late: Optional[str] = None  # that, once the bytes showed it (`settled`)

    def feed(self, data: bytes) -> None:
        if data:
            self.buf += data
        else:
            self.eof = True

    @property
    def waiting(self) -> bool:
        """Bytes are held that a pause of the client may complete into a message."""
        return bool(self.buf) and not self.buf.isspace()  # (no copy: a body can be megabytes)

    def next(self, paused: bool = False) -> Optional[Frame]:
        """The next frame the bytes so far hold, else None (more bytes are needed). `paused`:
        the client sent nothing for a while, so what arrived may be all of a broken frame."""
        buf = self.buf
        while buf[:1] in (b"\r", b"\n", b" ", b"\t"):  # stray line breaks between frames
            del buf[:1]
            if self.owed:  # or the end of a body taken after a pause (Frame.owed)
                self.owed -= 1
                if not self.owed:
                    self.owed_problem = None  # it was all there: nothing was wrong
        if self.owed and (buf or self.eof):  # something else came first: the header overstated it
            self.late, self.owed, self.owed_problem = self.owed_problem, 0, None
        if not buf:
            return None
        end = HEADER_END.search(buf, 0, MAX_HEADER + 4)
        block = bytes(buf[:end.start()]) if end else None
        if not HEADER_NAME.match(buf) or (end is None and len(buf) > MAX_HEADER) or \
                (block is not None and not all(HEADER_LINE.match(line) for line in block.splitlines())):
            return self._skip_to_header(paused)
        if end is None:
            return None  # the header block is still arriving
        headers = {}
        for line in block.splitlines():
            name, value = HEADER_LINE.match(line).groups()  # type: ignore[union-attr]
            headers.setdefault(name.lower(), value)
        start = end.end()
        value = headers.get(b"content-length")
        if value is None:
            return self._unsized(start, paused, "a message without a Content-Length header")
        if not value.isdigit() or int(value) == 0:
            return self._unsized(start, paused, f"a message whose Content-Length is {value.decode('latin-1')!r}, "
                                                f"not a positive number")
        return self._sized(start, int(value), paused)

    # -- frames ------------------------------------------------------------------------
    def _sized(self, start: int, length: int, paused: bool) -> Optional[Frame]:
        buf = self.buf
        stop = start + length
        cut = self._next_header(max(start, self.scanned - RESCAN), min(stop, len(buf)))
        if cut is not None:
            return self._take(start, cut, f"Content-Length {length} is larger than its message ({cut - start} bytes)")
        if len(buf) < stop:
            self.scanned = len(buf)
            if (paused or self.eof) and _parses(buf, start):
                problem = f"Content-Length {length} is larger than its message ({len(buf) - start} bytes)"
                if self.eof:
                    return self._take(start, len(buf), problem)
                held = len(buf)
                frame = self._take(start, held, None)  # said once more bytes show it (`settled`)
                frame.owed = self.owed = stop - held
                self.owed_problem = problem
                return frame
            return None
        after = bytes(buf[stop:stop + 64]).lstrip(b"\r\n")
        if after and not HEADER_NAME.match(after) and not re.fullmatch(rb"[A-Za-z][A-Za-z0-9-]*", after) \
                and not _parses(buf, start, stop):
            # the body goes on past its stated length: the header understated it (unless what it
            # states is a whole message, and a message without a header follows)
            cut = self._next_header(stop, len(buf))
            if cut is None and not (paused or self.eof):
                return None
            end = cut if cut is not None else _before_partial_header(buf, stop)
            return self._take(start, end, f"Content-Length {length} is smaller than its message "
                                          f"({end - start} bytes)")
        return self._take(start, stop, None)

    def _unsized(self, start: int, paused: bool, problem: str) -> Optional[Frame]:
        cut = self._next_header(max(start, self.scanned - RESCAN), len(self.buf))
        if cut is not None:
            return self._take(start, cut, problem)
        self.scanned = len(self.buf)
        if paused or self.eof:
            if _parses(self.buf, start) or self.eof:
                return self._take(start, len(self.buf), problem)
        return None

    def _skip_to_header(self, paused: bool) -> Optional[Frame]:
        """Bytes that do not start with a header: everything up to the next header is dropped
        (or, when it is a whole JSON message sent without a header, answered)."""
        cut = self._next_header(1, len(self.buf), partial=True)
        if cut is None:
            if not (paused or self.eof):
                return None
            if not (_parses(self.buf) or self.eof):
                return None
            cut = len(self.buf)
        return self._take(0, cut, f"{cut} bytes that are not a message header")

    def settled(self) -> Optional[str]:
        """What was wrong with the last frame taken short after a pause (Frame.owed), once the
        bytes that followed showed it (said once); None otherwise."""
        late, self.late = self.late, None
        return late

    # -- helpers -----------------------------------------------------------------------
    def _next_header(self, lo: int, hi: int, partial: bool = False) -> Optional[int]:
        """Where the next `Content-Length: N` header line starts in buf[lo:hi], else None;
        `partial`: also one still arriving at the end of the bytes."""
        buf = self.buf
        if not partial and buf.find(b"\n", lo) < 0:  # a header line ends in one: none can start here
            return None  # (a body of JSON holds no raw line break but as white space: 10 MB in 0.25 ms, not 2.4)
        while True:
            at = buf.find(MARK, lo, hi + len(MARK))
            if at < 0 or at >= hi:
                return None
            if BOUNDARY.match(buf, at) or (partial and PARTIAL.fullmatch(buf, at)):
                return at
            lo = at + 1

    def _take(self, start: int, stop: int, problem: Optional[str]) -> Frame:
        buf = self.buf
        if len(buf) - stop < stop - start:  # the body is most of the bytes held: it becomes the body
            rest = bytearray(buf[stop:])  # (a 10 MB didOpen: no copy of it, only of what followed)
            del buf[stop:]
            del buf[:start]  # (a bytearray drops its head without moving the rest)
            body: Union[bytes, bytearray] = buf
            self.buf = rest
        else:
            with memoryview(buf) as view:  # one copy of the body
                body = bytes(view[start:stop])
            del buf[:stop]
        self.scanned = 0
        return Frame(body, problem)


def _before_partial_header(buf: bytearray, lo: int) -> int:
    """The end of `buf`, or where a header line that is still arriving starts at its tail."""
    for at in range(max(lo, len(buf) - 40), len(buf)):
        tail = bytes(buf[at:])
        if MARK.startswith(tail) or PARTIAL.fullmatch(tail):
            return at
    return len(buf)


def _parses(buf: bytearray, start: int = 0, stop: Optional[int] = None) -> bool:
    """Whether buf[start:stop] is one JSON value; copied only when it ends as an object or an
    array can (a body of megabytes still arriving is asked at each pause of the client)."""
    stop = len(buf) if stop is None else stop
    while stop > start and buf[stop - 1] in WHITE:
        stop -= 1
    if stop <= start or buf[stop - 1] not in CLOSERS:
        return False
    data = bytes(buf[start:stop]).lstrip()
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def request_id(body: Union[bytes, bytearray]) -> Optional[object]:
    """The id a broken request shows before its params, if any (for an error answer)."""
    at = body.find(b'"params"')
    head = body[:at] if at >= 0 else body
    match = ID.search(head)
    if match is None:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None


def split_all(data: bytes) -> List[Tuple[bytes, Optional[str]]]:
    """Every frame of `data` as if the client then paused (tests and tools)."""
    frames = Frames()
    frames.feed(data)
    out = []
    while True:
        frame = frames.next() or frames.next(paused=True)
        late = frames.settled() or (frames.owed_problem if frame is None else None)  # nothing more comes
        if late is not None:
            out[-1] = (out[-1][0], late)
        if frame is None:
            return out
        out.append((frame.body, frame.problem))


PIPE_BYTES = 1 << 20  # what a pipe holds once widened (Linux's default limit for a user)


def widen_pipe(stream: Any) -> bool:
    """Make the pipe under `stream` hold PIPE_BYTES; whether it was done. A pipe holds 64 KB: a
    10 MB message crossed it in 160 turns of the writer and the reader, each, on a loaded machine,
    a wait for a CPU. Linux only (F_SETPIPE_SZ); refused quietly elsewhere, for what is not a pipe,
    or over the system's limit."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import fcntl  # (POSIX only)

        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)  # (3.9: no name)
        return True
    except (AttributeError, ImportError, OSError, ValueError):  # no fileno, not a pipe, over the limit
        return False
