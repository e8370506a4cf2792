"""A big document's incremental change (vjplint.server.edits) gives the text pygls' own way gives,
for every position encoding, line break and character width; what it cannot place it leaves to
that way (None)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st
from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument

from vjplint.server import edits

LINES = st.lists(st.tuples(st.text(st.sampled_from("ab é中😀\t"), max_size=6), st.sampled_from(["\n", "\r\n", "\r"])),
                 min_size=1, max_size=6)


def units(text: str, encoding: str) -> int:
    return {"utf-8": len(text.encode("utf-8")), "utf-16": len(text.encode("utf-16-le")) // 2}.get(encoding, len(text))


def positions(text: str, encoding: str) -> list:
    """Every valid position: each character boundary of each line (LSP's line breaks), the end of
    the text included."""
    return [types.Position(row, units(line[:i], encoding))
            for row, line in enumerate(re.split(r"\r\n|\r|\n", text)) for i in range(len(line) + 1)]


@pytest.mark.fuzz
@settings(max_examples=60, deadline=None)
@given(LINES, st.sampled_from(["utf-8", "utf-16", "utf-32"]), st.data(), st.text(st.sampled_from("x\n😀"), max_size=3))
def test_a_change_gives_what_pygls_gives(lines: list, encoding: str, data, new_text: str) -> None:
    text = "".join(line + end for line, end in lines)
    valid = positions(text, encoding)
    start, end = sorted([data.draw(st.sampled_from(valid)), data.draw(st.sampled_from(valid))],
                        key=lambda p: (p.line, p.character))
    document = TextDocument("file:///m.py", text, position_codec=PositionCodec(encoding))
    document.apply_change(types.TextDocumentContentChangePartial(range=types.Range(start, end), text=new_text))
    # a lone \r breaks a line for LSP and pygls alike, but is left to pygls (`plain`)
    expected = document.source if "\r" not in text.replace("\r\n", "") else None
    assert edits.apply(text, start, end, new_text, encoding) == expected
    assert edits.apply(text, start, end, new_text, encoding, known_plain=expected is not None) == expected


@pytest.mark.unit
def test_what_it_cannot_place_is_left_to_pygls() -> None:
    text = "ab\n😀c\n"
    assert edits.apply(text, types.Position(0, 3), types.Position(0, 3), "x", "utf-16") is None  # past the line
    assert edits.apply(text, types.Position(5, 0), types.Position(5, 0), "x", "utf-16") is None  # past the text
    assert edits.apply(text, types.Position(1, 1), types.Position(1, 1), "x", "utf-16") is None  # inside 😀
    assert edits.apply(text, types.Position(1, 2), types.Position(1, 2), "x", "utf-16") == "ab\n😀xc\n"
    assert edits.apply("a\x0cb\n", types.Position(0, 0), types.Position(0, 0), "x", "utf-16") is None  # form feed
    assert edits.apply("a\rb\n", types.Position(0, 0), types.Position(0, 0), "x", "utf-16") is None  # a lone \r
    big = "".join(f"line {i}\r\n" for i in range(100_000))  # lines found across blocks
    assert edits.apply(big, types.Position(70_001, 4), types.Position(70_001, 6), "", "utf-16") == \
        big.replace("line 70001\r\n", "line0001\r\n")
    assert edits.apply(big, types.Position(100_000, 0), types.Position(100_000, 0), "end", "utf-16") == big + "end"
    assert edits.apply(big, types.Position(100_001, 0), types.Position(100_001, 0), "x", "utf-16") is None


@pytest.mark.fuzz
@settings(max_examples=60, deadline=None)
@given(st.text(st.sampled_from("ab\n😀"), max_size=30))
def test_a_big_documents_lines_found_when_asked_are_source_lines(text: str) -> None:
    from vjplint.syntax.positions import source_lines

    lines, expected = edits.Lines(text), source_lines(text)
    assert len(lines) == len(expected)
    assert [lines[i] for i in range(len(lines))] == list(lines) == expected
    assert lines[-1:] == expected[-1:]
