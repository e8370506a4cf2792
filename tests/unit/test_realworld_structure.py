"""Structure rules (VJP301-VJP309) on patterns from public JAX code bases that once gave, or could
give, false positives (snippets in tests/realworld/structure_*.py, written here, not copied).

Each snippet must stay silent; and a small edit that removes what makes it correct must make
it fire, so the test shows the guard, not a rule that never looks."""

from __future__ import annotations


import pytest

from tests.conftest import ROOT, lint

CODES = ["VJP301", "VJP302", "VJP303", "VJP304", "VJP305", "VJP306", "VJP307", "VJP308", "VJP309"]
SNIPPETS = ROOT / "tests" / "realworld"

# snippet -> (replacements that remove what makes it correct, code that must then fire)
BREAKERS = {
    "structure_placeholder_rules.py": ([('raise AssertionError("unreachable")', "return (None, None)")], "VJP305"),
    "structure_registration_by_getattr.py": ([('@getattr(root, "defjvp", lambda rule: rule)\n', "")], "VJP301"),
    "structure_registration_by_method_name.py": (
        [('method="defvjp"', 'method="register"'), ("getattr(fn, method)(", "print(fn, method, "),
         ("triple.defvjp_with_logs(", "print(")], "VJP301"),
    "structure_partial_defjvp_symbolic_zeros.py": ([("@partial(add.defjvp, symbolic_zeros=True)\n", "")], "VJP301"),
}


def _codes(source: str, name: str):
    return [d.code for d in lint(source, select=CODES, filename=name)]


def test_every_structure_snippet_has_a_breaker():
    assert sorted(p.name for p in SNIPPETS.glob("structure_*.py")) == sorted(BREAKERS)


@pytest.mark.parametrize("name", sorted(BREAKERS))
def test_structure_snippet_stays_silent(name):
    assert _codes((SNIPPETS / name).read_text(encoding="utf-8"), name) == []


@pytest.mark.parametrize("name", sorted(BREAKERS))
def test_structure_snippet_fires_once_broken(name):
    source = (SNIPPETS / name).read_text(encoding="utf-8")
    replacements, code = BREAKERS[name]
    broken = source
    for old, new in replacements:
        assert old in source
        if len(replacements) > 1:  # each guard alone keeps the snippet silent
            assert _codes(source.replace(old, new), name) == []
        broken = broken.replace(old, new)
    assert code in _codes(broken, name)
