"""VJP334 and VJP342 read one fact (`facts.misordered_jvp_unpackings`): a jvp rule's unpacking
that reorders the function's parameters is reported once, by VJP334, never by both on one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from vjplint.lint.engine import lint_source

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures" / "rules" / "VJP334").glob("*.py")) + \
    sorted((ROOT / "fixtures" / "rules" / "VJP342").glob("*.py"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_line_is_reported_by_both_order_rules(path: Path) -> None:
    result = lint_source(path.name, path.read_text(encoding="utf-8"))
    lines = {code: {d.location.row for d in result.diagnostics if d.code == code} for code in ("VJP334", "VJP342")}
    assert not lines["VJP334"] & lines["VJP342"], f"{path.name}: both rules on lines {lines['VJP334'] & lines['VJP342']}"


def test_the_neutral_names_fixture_draws_vjp334_alone() -> None:
    path = ROOT / "fixtures" / "rules" / "VJP334" / "fire_neutral_names_primal_call.py"
    result = lint_source(path.name, path.read_text(encoding="utf-8"))
    assert [(d.code, d.location.row, d.location.column) for d in result.diagnostics] == [("VJP334", 17, 5)]


def test_a_shape_only_primals_swap_draws_nothing() -> None:
    path = ROOT / "fixtures" / "rules" / "VJP334" / "silent_swapped_primal_names_shape_only.py"
    assert not lint_source(path.name, path.read_text(encoding="utf-8")).diagnostics
