"""A big module linted a family of statements at a time (vjplint.lint.engine._lint_grouped,
chosen by `engine.lint_source` from `LintSession.grouped_min_chars`): the same diagnostics as the
whole lint, its text split a piece at a time into the chunks of its whole parse."""

from __future__ import annotations

from typing import List

import pytest
from tests.conftest import ROOT, check_each

from vjplint.lint import chunks, engine
from vjplint.lint.engine import lint_source
from vjplint.lint.chunks import split
from vjplint.lint.incremental import IncrementalLinter
from vjplint.lint.session import GROUPED_FLOOR, GROUPED_NAMES, GROUPED_NAMES_PER_MB, LintSession, grouped_min_chars
from vjplint.settings.config import Config
from vjplint.syntax.positions import lines_with_endings

FIXTURES = sorted((ROOT / "fixtures" / "rules").glob("*/*.py"))

# Column-0 lines that start no statement: inside strings and brackets, `else:`-like clauses,
# decorators, a backslash continuation, comments between statements.
TRICKY = '''\
"""A module docstring
def not_a_function():
"""
# a comment before the imports
import jax
import jax.numpy as jnp

TEMPLATE = """
def f(x):
    return x
x = 1
"""
values = [
1,
2,
]
if values:
    a = 1
else:
    a = 2
try:
    import numpy
except ImportError:
    numpy = None
finally:
    b = 3
total = 1 + \\
2
@jax.custom_vjp
def f(x):
    return x
# between f and its rules


def f_fwd(x):
    return x, x
def f_bwd(x, g):
    return (g * jnp.cos(x),)
f.defvjp(f_fwd, f_bwd)
class Holder:
    pass
for i in range(3):
    pass
else:
    pass
while False:
    pass
x = 1; y = 2
'''


def _chunks(text: str) -> List[tuple]:
    lines = lines_with_endings(text)
    return [(c.lines, c.statements, c.context, c.binds, c.mentions, c.defines, c.registers, c.odd_registration)
            for c in split(lines, 0, len(lines))]


def facts(result) -> tuple:
    return ([(d.code, d.location, d.end_location, d.message, d.fix, d.noqa_row) for d in result.diagnostics],
            result.errors)


def lint(text: str, grouped: bool, name: str = "module.py") -> tuple:
    session = LintSession(grouped_min_chars=0 if grouped else 10**12)
    return facts(lint_source(name, text, Config(), session=session))


@pytest.mark.parametrize("piece", [1, 2, 3, 5, 8])
def test_a_module_split_a_piece_at_a_time_gives_the_chunks_of_its_whole_parse(monkeypatch, piece: int) -> None:
    whole = _chunks(TRICKY)
    assert len(whole) == 16 and "".join("".join(c[0]) for c in whole) == TRICKY
    monkeypatch.setattr(chunks, "PIECE_LINES", piece)
    assert _chunks(TRICKY) == whole


def test_a_piece_is_not_cut_after_a_one_line_decorator(monkeypatch) -> None:
    """Each block's `def` line follows its decorator: a cut there leaves a piece ending with the
    decorator, which does not parse and would be parsed again twice as long. Pieces of 1 line
    reach the `def` line after a decorator in every block; no piece fails, and the chunks are the
    whole parse's."""
    block = "@jax.custom_vjp\ndef f{i}(x):\n    return x\n"
    text = "import jax\n" + "".join(block.format(i=i) for i in range(20))
    whole = _chunks(text)
    parsed: List[tuple] = []
    real = chunks._split_piece

    def piece(lines, begin, end):
        try:
            return real(lines, begin, end)
        except SyntaxError:
            parsed.append((begin, end))
            raise

    monkeypatch.setattr(chunks, "_split_piece", piece)
    monkeypatch.setattr(chunks, "PIECE_LINES", 1)
    assert _chunks(text) == whole and len(whole) == 21
    assert parsed == []


@pytest.mark.parametrize("piece", [1, 4, 10**6])
def test_a_syntax_error_in_any_piece_is_a_syntax_error(monkeypatch, piece: int) -> None:
    monkeypatch.setattr(chunks, "PIECE_LINES", piece)
    for broken in (TRICKY.replace("b = 3", "b = (3"), TRICKY + "def g(:\n    pass\n", "x = '''\n" + TRICKY):
        with pytest.raises(SyntaxError):
            _chunks(broken)


@pytest.mark.parametrize("batch", [0, 300, engine.GROUPED_BATCH_CHARS], ids=["families", "small-batches", "batches"])
def test_the_grouped_lint_equals_the_whole_lint_on_every_rule_fixture(monkeypatch, batch: int) -> None:
    """Split in pieces of 7 lines, so that every fixture is cut where its statements allow; each
    family linted alone (batch 0), and families linted together in batches (`engine._batches`)."""
    monkeypatch.setattr(chunks, "PIECE_LINES", 7)
    monkeypatch.setattr(engine, "GROUPED_BATCH_CHARS", batch)

    def check(path) -> None:
        text = path.read_text(encoding="utf-8")
        assert lint(text, True, path.name) == lint(text, False, path.name)

    check_each(FIXTURES, check, lambda p: f"{p.parent.name}/{p.name}", least=600)


@pytest.mark.parametrize("batch", [0, 1, 200])
def test_the_grouped_lint_of_the_tricky_module_finds_the_whole_lints_findings(monkeypatch, batch: int) -> None:
    monkeypatch.setattr(chunks, "PIECE_LINES", 2)
    monkeypatch.setattr(engine, "GROUPED_BATCH_CHARS", batch)
    text = TRICKY.replace("g * jnp.cos(x)", "g * jnp.cos(x), g")  # VJP arity: one more cotangent than inputs
    grouped = lint(text, True)
    assert grouped == lint(text, False)
    assert grouped[0], "the module has findings to compare"


def test_a_module_that_cannot_be_split_is_linted_whole() -> None:
    text = TRICKY + "def broken(:\n    pass\n"
    grouped = lint(text, True)
    assert grouped == lint(text, False)
    assert [(d[0], d[1].row) for d in grouped[0]] == [("VJP900", TRICKY.count("\n") + 1)]


def test_the_threshold_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("VJPLINT_GROUPED_MIN_CHARS", raising=False)
    assert grouped_min_chars() is None and LintSession().grouped_min_chars is None  # by measure
    for value, expected in (("0", 0), (" 1234 ", 1234), ("-5", 0), ("many", None), ("", None)):
        monkeypatch.setenv("VJPLINT_GROUPED_MIN_CHARS", value)
        assert grouped_min_chars() == expected
        assert LintSession().grouped_min_chars == expected
        assert LintSession().for_worker().grouped_min_chars == expected
    forced = LintSession(grouped_min_chars=1000)
    assert forced.groups("x" * 1000, ["custom_vjp"]) and not forced.groups("x" * 999, ["custom_vjp"])
    assert forced.groups("x" * 1000, ["custom_vjp"], grafted=True)  # the environment's size alone decides


def test_by_measure_only_a_module_dense_in_the_names_is_grouped() -> None:
    """GROUPED_NAMES occurrences plus GROUPED_NAMES_PER_MB a million characters, from GROUPED_FLOOR
    characters (docs/performance.md: the crossovers measured)."""
    session = LintSession(grouped_min_chars=None)
    names = ["custom_vjp", "defvjp"]

    def needed(size: int) -> int:
        return GROUPED_NAMES + GROUPED_NAMES_PER_MB * size // 10**6

    assert needed(GROUPED_FLOOR) == 525 and needed(10**7) == 3_000
    words = "custom_vjp\n" * 300 + "defvjp\n" * 225  # 525 occurrences
    dense = " " * (GROUPED_FLOOR - len(words)) + words
    assert len(dense) == GROUPED_FLOOR
    assert session.groups(dense, names)
    assert not session.groups(dense, names, grafted=True)
    assert not session.groups(dense.replace("defvjp", "defjvp", 1), names)  # 524
    assert not session.groups(dense[1:], names)  # 99,999 characters: under the floor
    big = " " * (10**7 - 11 * 3_000) + "custom_vjp " * 3_000  # 10 MB
    assert len(big) == 10**7 and session.groups(big, names)
    assert not session.groups(big.replace("custom_vjp", "custom_xyz", 1), names)  # 2,999
    assert not session.groups(" " * 10**7 + "custom_vjp", names)  # one derivative in 10 MB: whole


def test_a_big_documents_first_lint_in_the_server_caches_its_families_at_once() -> None:
    """Above the threshold, the incremental linter's first lint is by families (not whole, then
    primed): an edit after it lints only the edited family."""
    text = TRICKY.replace("g * jnp.cos(x)", "g * jnp.cos(x), g")
    linter = IncrementalLinter("module.py", Config(), session=LintSession(grouped_min_chars=0))
    first = linter.lint(text, whole_first=True)
    assert not linter.unprimed and linter.stats["full"] == 0 and linter.stats["linted"] > 1
    assert facts(first) == lint(text, False)
    linted = linter.stats["linted"]
    edited = text.replace("a = 2", "a = 3")
    assert facts(linter.lint(edited)) == lint(edited, False)
    assert linter.stats["linted"] == linted + 1
