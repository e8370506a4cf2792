"""The module text a big module's families share (vjplint/model/file_model.py `joined`,
vjplint/plans/residual_plan.py `lines_digest`): made once per line table, never stale."""

from __future__ import annotations

from vjplint.model.file_model import joined
from vjplint.plans.residual_plan import lines_digest


def test_a_tuple_is_joined_once_and_another_table_is_joined_afresh() -> None:
    first = ("import jax", "x = 1")
    assert joined(first) == "import jax\nx = 1"
    assert joined(first) is joined(first)  # the same string: made once
    second = ("import jax", "x = 2")
    assert joined(second) == "import jax\nx = 2"
    assert lines_digest(first) != lines_digest(second)
    assert lines_digest(first) == lines_digest(tuple(first)) == lines_digest(list(first))


def test_a_list_is_never_memoised_so_an_edit_in_place_is_seen() -> None:
    lines = ["a = 1", "b = 2"]
    before = (joined(lines), lines_digest(lines))
    lines[1] = "b = 3"
    assert joined(lines) == "a = 1\nb = 3"
    assert lines_digest(lines) != before[1]
