"""Rule.TRIGGERS: the byte strings a file needs for a rule to fire, and the prefilter built from them.

A file containing none of a rule's triggers is never parsed for that rule; the engine's and the
fast path's prefilter names are the union over all rules (aliases configured by the user are
added at run time).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from vjplint import engine
from vjplint.rules.registry import all_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
RULES = sorted(all_rules().items())


def _fastpath():
    for name in ("vjplint.batch.fastpath", "vjplint.fastpath"):  # the module is moving to vjplint.batch
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise AssertionError("no fastpath module")


@pytest.mark.parametrize("code,rule", RULES, ids=[code for code, _ in RULES])
def test_every_rule_declares_its_own_triggers(code, rule):
    triggers = vars(rule).get("TRIGGERS")  # declared on the class itself, not inherited by accident
    assert triggers, f"{code} declares no TRIGGERS"
    assert all(isinstance(t, bytes) and t for t in triggers)
    assert len(set(triggers)) == len(triggers)


@pytest.mark.parametrize("code,rule", RULES, ids=[code for code, _ in RULES])
def test_examples_and_firing_fixtures_contain_a_trigger(code, rule):
    sources = {f"INVALID[{i}]": text.encode("utf-8") for i, text in enumerate(rule.INVALID)}
    sources.update({p.name: p.read_bytes() for p in sorted((FIXTURES / code).glob("fire_*.py"))})
    assert sources, f"{code} has no firing example or fixture"
    for where, data in sources.items():
        assert any(t in data for t in rule.TRIGGERS), f"{code} {where} contains none of {rule.TRIGGERS}"


def test_prefilter_names_are_the_union_of_the_triggers():
    union = {t for _, rule in RULES for t in rule.TRIGGERS}
    assert set(engine.PREFILTER_NAMES) == union
    assert set(_fastpath().PREFILTER_NAMES) == union


def test_a_file_without_triggers_is_not_analysed():
    source = "import jax\n\ndef f(x):\n    return jax.numpy.sin(x)\n"
    assert not engine.lint_source("t.py", source.encode()).analysed


def test_every_finding_on_the_corpus_is_in_a_file_with_its_rules_trigger():
    from conftest import lint

    root = Path(__file__).resolve().parent
    files = sorted(FIXTURES.rglob("*.py")) + sorted((root / "realworld").glob("*.py"))
    table = dict(RULES)
    fired = set()
    for path in files:
        data = path.read_bytes()
        for d in lint(data.decode("utf-8"), filename=path.name, extend_select=tuple(table)):  # default-off too
            if d.code in table:
                fired.add(d.code)
                assert any(t in data for t in table[d.code].TRIGGERS), f"{d.code} fired in {path.name}"
    linting = {code for code, rule in RULES if _lints(rule)}
    assert fired == linting  # the corpus exercises every rule the linter runs, so the check covers each


def _lints(rule) -> bool:
    """The rule analyses files (codes that only `vjplint verify` reports implement neither hook)."""
    from vjplint.rules.base import Rule

    return rule.check is not Rule.check or any(name.startswith("visit_") for name in dir(rule))
