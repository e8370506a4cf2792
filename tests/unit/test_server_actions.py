"""The server's edit logic without a server: `# noqa` insertion, whole-text edits, kinds, hover."""

from __future__ import annotations

import random

import pytest

from vjplint.diagnostics import Edit, Position
from vjplint.syntax.positions import source_lines as split_lines
from vjplint.fixes.edits import apply_edits
from vjplint.server.actions import kind_wanted, lines_keepends, noqa_code_at, noqa_edit, whole_text_edit


def add_noqa(text: str, row: int, code: str = "VJP101"):
    edit = noqa_edit(text, split_lines(text), row, code)
    return None if edit is None else apply_edits(text, [edit])


@pytest.mark.parametrize("line, expected", [
    ("def f(lo, x):", "def f(lo, x):  # noqa: VJP101"),
    ("def f(lo, x):   ", "def f(lo, x):  # noqa: VJP101"),
    ("def f(lo, x):  # noqa: E501", "def f(lo, x):  # noqa: E501, VJP101"),
    ("def f(lo, x):  # noqa: E501,F401  why", "def f(lo, x):  # noqa: E501, F401, VJP101  why"),
    ("def f(lo, x):  # NOQA:vjp102", "def f(lo, x):  # noqa: VJP102, VJP101"),
    # The malformed form (no colon) is rewritten, not duplicated.
    ("def f(lo, x):  # noqa VJP101", "def f(lo, x):  # noqa: VJP101"),
    ("def f(lo, x):  # a comment", "def f(lo, x):  # a comment  # noqa: VJP101"),
    ("def f(lo='#', x=\"it's\"):", "def f(lo='#', x=\"it's\"):  # noqa: VJP101"),
])
def test_noqa_is_added_or_extended(line: str, expected: str) -> None:
    text = f"import jax\n{line}\n    return x\n"
    assert add_noqa(text, 2) == f"import jax\n{expected}\n    return x\n"


def test_noqa_keeps_crlf_line_endings() -> None:
    assert add_noqa("a = 1\r\nb = f(a)\r\n", 2) == "a = 1\r\nb = f(a)  # noqa: VJP101\r\n"


@pytest.mark.parametrize("text, row", [
    ("def f(lo, x):  # noqa\n    return x\n", 1),  # a bare noqa already silences everything
    ('y = g(lo, """\nsome text\n""")\n', 1),  # the line ends inside a string
    ("y = g(lo, \\\n      x)\n", 1),  # a backslash continuation
    ("x = 1\n", 5),  # no such line
])
def test_noqa_is_refused_where_a_comment_cannot_go(text: str, row: int) -> None:
    assert add_noqa(text, row) is None


@pytest.mark.parametrize("old, new", [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc\n", "a\nb\nc\nd\n"),
    ("a\nb\nc", "a\nb\nc\n"),
    ("a\nb\nc\n", "z\n"),
    ("", "x = 1\n"),
    ("x = 1\n", ""),
    ("a\r\nb\r\n", "a\r\nb2\r\nb\r\n"),
    ("é𝜆\nb\n", "é𝜆\nc\n"),
])
def test_whole_text_edit_turns_old_into_new(old: str, new: str) -> None:
    edit = whole_text_edit(old, new)
    assert edit is not None
    assert apply_edits(old, [edit]) == new


def test_whole_text_edit_spans_only_the_changed_lines() -> None:
    old = "".join(f"line {i}\n" for i in range(100))
    new = old.replace("line 50\n", "line fifty\nline 50b\n")
    assert whole_text_edit(old, new) == Edit("line fifty\nline 50b\n", Position(51, 1), Position(52, 1))
    assert whole_text_edit(old, old) is None


def test_whole_text_edit_on_random_line_edits() -> None:
    rng = random.Random(7)
    words = ["a", "b", "x = 1", "", "é", "\U0001d706"]
    for _ in range(300):
        old = "\n".join(rng.choice(words) for _ in range(rng.randint(0, 6))) + rng.choice(["", "\n"])
        new_lines = old.split("\n")
        for _ in range(rng.randint(1, 3)):
            i = rng.randint(0, len(new_lines))
            if rng.random() < 0.5 and i < len(new_lines):
                del new_lines[i]
            else:
                new_lines.insert(i, rng.choice(words))
        new = "\n".join(new_lines)
        edit = whole_text_edit(old, new)
        assert (edit is None) == (old == new)
        if edit is not None:
            assert apply_edits(old, [edit]) == new, (old, new)


def test_lines_keepends_agrees_with_lsp_lines() -> None:
    text = "a\r\nb\rc\nd\x0ce\u2028f"
    assert lines_keepends(text) == ["a\r\n", "b\r", "c\n", "d\x0ce\u2028f"]
    assert split_lines(text) == ["a", "b", "c", "d\x0ce\u2028f"]


@pytest.mark.parametrize("kind, only, wanted", [
    ("source.fixAll.vjplint", None, True),
    ("source.fixAll.vjplint", ["source.fixAll"], True),
    ("source.fixAll.vjplint", ["source"], True),
    ("source.fixAll.vjplint", ["quickfix"], False),
    ("quickfix", ["source.fixAll"], False),
    ("source.fixAllx", ["source.fixAll"], False),
])
def test_code_action_kinds_are_hierarchical(kind: str, only, wanted: bool) -> None:
    assert kind_wanted(kind, only) is wanted


def test_noqa_code_under_the_cursor() -> None:
    line = "x = f(a)  # noqa: E501, VJP101"
    start = line.index("VJP101")
    assert noqa_code_at(line, start) == "VJP101"
    assert noqa_code_at(line, start + 6) == "VJP101"
    assert noqa_code_at(line, line.index("E501") + 1) == "E501"
    assert noqa_code_at(line, 2) is None
    assert noqa_code_at("x = 1  # noqa", 10) is None
