"""The server's reader (vjplint.server.framing): well-formed streams cut anywhere give back every
message unchanged; after any broken frame, the next well-formed message is read intact."""

from __future__ import annotations

import json
from typing import List, Optional, Tuple

import pytest
from hypothesis import given, settings, strategies as st

from vjplint.server.framing import Frame, Frames, request_id, split_all

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
MESSAGES = st.lists(st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers(0, 10**6),
                                           "method": TEXT, "params": st.dictionaries(TEXT, TEXT, max_size=3)}),
                    min_size=1, max_size=6)


def frame(message: dict, length: Optional[bytes] = None) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %s\r\n\r\n%s" % (str(len(body)).encode() if length is None else length, body)


def read(chunks: List[bytes], pause_after_each: bool) -> List[Tuple[bytes, Optional[str]]]:
    """Frames and their problems as the server logs them: a frame taken short after a pause gets
    its problem once the bytes after it show one (Frames.settled)."""
    frames, out = Frames(), []

    def take(f: Optional[Frame]) -> Optional[Frame]:
        late = frames.settled()
        if late is not None:
            out[-1] = (out[-1][0], late)
        if f is not None:
            out.append((f.body, f.problem))
        return f

    for chunk in chunks:
        frames.feed(chunk)
        while take(frames.next()) is not None:
            pass
        if pause_after_each:
            while take(frames.next(paused=True)) is not None:
                pass
    return out


def cut(data: bytes, points: List[int]) -> List[bytes]:
    points = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:])]


@pytest.mark.fuzz
@settings(max_examples=40, deadline=None)
@given(MESSAGES, st.lists(st.integers(0, 10**6), max_size=12))
def test_well_formed_streams_cut_anywhere_give_every_message_back(messages: List[dict], points: List[int]) -> None:
    data = b"".join(frame(m) for m in messages)
    assert [json.loads(body) for body, problem in read(cut(data, points), False)] == messages
    assert all(problem is None for _, problem in read(cut(data, points), False))


BROKEN = [b"seven", b"-3", b"0", b"1", b"99999"]


@pytest.mark.fuzz
@settings(max_examples=40, deadline=None)
@given(MESSAGES, st.integers(0, 5), st.sampled_from(BROKEN), st.lists(st.integers(0, 10**6), max_size=8),
       st.booleans())
def test_after_a_broken_frame_the_next_messages_are_read_intact(
        messages: List[dict], where: int, length: bytes, points: List[int], pause: bool) -> None:
    where = where % len(messages)
    data = b"".join(frame(m, length if i == where else None) for i, m in enumerate(messages))
    frames = read(cut(data, points) + [b""], pause)  # then the client closes the stream
    # every well-formed message intact and in order, nothing else taken for one
    assert [json.loads(body) for body, problem in frames if problem is None] == messages[:where] + messages[where + 1:]
    if not pause:  # and the broken one read whole, when the client did not pause within it
        assert [(json.loads(body), problem is None) for body, problem in frames] == [
            (m, i != where) for i, m in enumerate(messages)]


def test_the_id_of_a_broken_request_is_read_before_its_params() -> None:
    assert request_id(b'{"jsonrpc": "2.0", "id": 4, "method": "x", "params": {"id": 5') == 4
    assert request_id(b'{"jsonrpc": "2.0", "id": "a\\"b", "method"') == 'a"b'
    assert request_id(b'{"jsonrpc": "2.0", "method": "x", "params": {"id": 5}') is None


def test_a_body_whose_trailing_white_space_comes_after_a_pause_is_no_broken_frame() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x"}).encode() + b"  \r\n"
    data = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    # the client pauses before the white space the header counts: the message is taken at the pause
    assert read([data[:-4], data[-4:]], True) == [(body.rstrip(), None)]
    assert read([data[:-4], data[-4:], frame({"jsonrpc": "2.0", "id": 2, "method": "y"})], True) == [
        (body.rstrip(), None), (json.dumps({"jsonrpc": "2.0", "id": 2, "method": "y"}).encode(), None)]
    # what comes instead, or the end of input, shows that the header overstated it
    short = "Content-Length 46 is larger than its message (42 bytes)"
    assert read([data[:-4], b" " + frame({"jsonrpc": "2.0", "id": 2, "method": "y"})], True) == [
        (body.rstrip(), short), (json.dumps({"jsonrpc": "2.0", "id": 2, "method": "y"}).encode(), None)]
    assert read([data[:-4], b""], True) == [(body.rstrip(), short)]
    assert split_all(data[:-4]) == [(body.rstrip(), short)]
    assert split_all(data) == [(body, None)]
