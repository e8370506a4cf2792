"""Rule.TRIGGERS: the byte strings a file needs for a rule to fire, and the prefilter built from them.

A file containing none of a rule's triggers is never parsed for that rule; the engine's and the
fast path's prefilter names are the union over all rules (aliases configured by the user are
added at run time).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from vjplint.lint import engine
from vjplint.rules.registry import all_rules

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
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


@pytest.mark.paths_equal
def test_every_finding_on_the_corpus_is_in_a_file_with_its_rules_trigger():
    from tests.conftest import lint

    root = Path(__file__).resolve().parents[1]  # tests/
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
    """The rule analyses files (codes that only `vjplint verify` reports implement no hook)."""
    from vjplint.rules.base import Rule

    return (rule.check is not Rule.check or rule.check_derivative is not Rule.check_derivative
            or any(name.startswith("visit_") for name in dir(rule)))


# -- Rule.NEEDS: the API a rule is about, which the text must spell for the rule to run ----------
GATED = [(code, rule) for code, rule in RULES if rule.NEEDS is not None]


def test_some_rules_are_gated_by_what_they_need():
    assert {code for code, _ in GATED} >= {"VJP328", "VJP332", "VJP612"}


@pytest.mark.parametrize("code,rule", GATED, ids=[code for code, _ in GATED])
def test_examples_and_firing_fixtures_match_the_needs(code, rule):
    sources = {f"INVALID[{i}]": text for i, text in enumerate(rule.INVALID)}
    sources.update({p.name: p.read_text(encoding="utf-8") for p in sorted((FIXTURES / code).glob("fire_*.py"))})
    for where, text in sources.items():
        assert rule.NEEDS.search(text), f"{code} {where} does not match {rule.NEEDS.pattern!r}"


@pytest.mark.parametrize("text,spells_numpy", [
    ("import numpy as np\n", True),
    ("from numpy import log\n", True),
    ("import os, numpy\n", True),
    ("import numpy.linalg\n", True),
    ("import jax.numpy as jnp\n", False),
    ("from jax import numpy as jnp\n", True),  # a false pass costs only the rule's run
    ("from . import numpy\n", True),
    ("from .numpy import log\n", False),
    ("import numpyro\n", False),
])
def test_the_numpy_gate_reads_an_import_of_numpy_itself(text, spells_numpy):
    from vjplint.rules.tracing.vjp332_numpy_on_traced_in_rule import NumpyOnTracedInRule

    assert (NumpyOnTracedInRule.NEEDS.search(text) is not None) is spells_numpy


@pytest.mark.paths_equal
def test_the_needs_gates_change_no_finding_on_the_corpus(monkeypatch):
    """Every file where a gate closes is linted with the gates and without them: same findings."""
    from tests.conftest import lint

    root = Path(__file__).resolve().parents[1]  # tests/
    files = [*sorted(FIXTURES.parent.rglob("*.py")), *sorted((root / "realworld").glob("*.py")),
             *sorted((root.parent / "eval" / "cases").rglob("*.py"))]
    examples = [(f"{code}.{kind}[{i}]", text) for code, rule in RULES for kind in ("VALID", "INVALID")
                for i, text in enumerate(getattr(rule, kind))]
    sources = [(p.name, p.read_text(encoding="utf-8")) for p in files] + examples
    closed = [(name, text) for name, text in sources if any(r.NEEDS.search(text) is None for _, r in GATED)]
    assert len(closed) > 100  # the gates close on much of the corpus: the comparison means something
    codes = tuple(code for code, _ in RULES)
    gated = [[(d.code, d.location, d.end_location, d.message) for d in lint(text, filename=name, extend_select=codes)]
             for name, text in closed]
    for _, rule in GATED:
        monkeypatch.setattr(rule, "NEEDS", None)
    open_ = [[(d.code, d.location, d.end_location, d.message) for d in lint(text, filename=name, extend_select=codes)]
             for name, text in closed]
    assert gated == open_


@pytest.mark.parametrize("code,rule", GATED, ids=[code for code, _ in GATED])
def test_the_engine_reads_each_need_as_its_pattern_does(code, rule):
    """engine._needed checks a pattern of literal words with `in`: the same answer as the search."""
    texts = ["", "x = jnp.where(c, a, b)", "lax.select(p, a, b)", "import numpy as np", "jax.numpy",
             "jnp.float32(1)", "dtype=float", "selection = 1", "nowhere", *rule.INVALID, *rule.VALID]
    for text in texts:
        assert engine._needed(rule.NEEDS, text) == (rule.NEEDS.search(text) is not None), (code, text)


# -- Rule.APIS / Rule.KINDS: which derivatives check_derivative judges ------------------------------
DERIVATIVE_RULES = [(code, rule) for code, rule in RULES if rule.APIS is not None or rule.KINDS is not None]


def test_the_api_and_kind_gates_name_known_protocols() -> None:
    from vjplint.model.jaxapi import API_REGISTRATION_METHODS
    from vjplint.rules.base import Rule

    assert len(DERIVATIVE_RULES) >= 29
    for code, rule in DERIVATIVE_RULES:
        assert rule.check_derivative is not Rule.check_derivative, f"{code} gates a check_derivative it lacks"
        assert rule.APIS is None or rule.APIS and rule.APIS <= set(API_REGISTRATION_METHODS), code
        assert rule.KINDS is None or rule.KINDS and rule.KINDS <= {"vjp", "jvp"}, code


def test_no_check_derivative_opens_with_its_own_api_or_kind_guard() -> None:
    """The guard is the rule's declared APIS/KINDS, read by the engine: a `check_derivative` that
    still opens by returning for an API or kind (`if d.api != "jax" or d.kind != "vjp": return`) fails."""
    import ast
    import inspect
    import textwrap

    guarded = []
    for code, rule in RULES:
        if "check_derivative" not in vars(rule):
            continue
        fn = ast.parse(textwrap.dedent(inspect.getsource(rule.check_derivative))).body[0]
        d = fn.args.args[1].arg
        # the statement that opens it, after plain assignments (`sig = d.signature`); a rule that
        # handles several APIs or kinds, each its own way, branches on them further down
        stmt = next(s for s in fn.body if not isinstance(s, ast.Assign))
        if isinstance(stmt, ast.If) and [type(s) for s in stmt.body] == [ast.Return] and any(
                isinstance(n, ast.Compare) and isinstance(n.left, ast.Attribute) and n.left.attr in ("api", "kind")
                and isinstance(n.left.value, ast.Name) and n.left.value.id == d
                and isinstance(n.ops[0], (ast.NotEq, ast.NotIn)) for n in ast.walk(stmt.test)):
            guarded.append(code)
    assert guarded == []


def test_the_engine_hands_check_derivative_only_the_declared_derivatives(monkeypatch) -> None:
    from vjplint.rules.order.vjp316_fwd_params_reordered import FwdParamsReordered
    from vjplint.rules.structure.vjp330_nnx_state_for_array_cotangent import NnxStateForArrayCotangent

    seen = []
    for cls in (FwdParamsReordered, NnxStateForArrayCotangent):
        monkeypatch.setattr(cls, "check_derivative", lambda self, d: seen.append((self.CODE, d.name, d.api, d.kind)))
    text = (
        "import jax\nfrom flax import nnx\n\n"
        "@jax.custom_vjp\ndef f(x):\n    return x\n\n"
        "@jax.custom_jvp\ndef g(x):\n    return x\n\n"
        "@nnx.custom_vjp\ndef h(m, x):\n    return x\n"
    )
    engine.lint_source("t.py", text)
    assert sorted(seen) == [("VJP316", "f", "jax", "vjp"), ("VJP316", "h", "nnx", "vjp"),
                            ("VJP330", "h", "nnx", "vjp")]


# -- the catalog's DERIVATIVE_ONLY: rules neither imported nor made without a derivative they judge ---
def _rule_classes():
    """Rule classes written the ways the catalog's gate tells apart."""
    import ast
    from typing import Set

    from vjplint.rules.base import Rule

    class SetUpOnly(Rule):
        CODE = "VJP990"
        KINDS = frozenset({"vjp"})

        def check(self) -> None:
            """A docstring."""
            self._seen: Set[ast.AST] = set()
            self._names = {}
            self._first = None

        def check_derivative(self, d) -> None:
            pass

    class ReadsTheModel(SetUpOnly):
        def check(self) -> None:
            self._seen = set()
            self._count = len(self.model.derivatives)  # reads the model: runs whatever it holds

    class Reports(SetUpOnly):
        def check(self) -> None:
            self._seen = set()
            for d in self.model.derivatives:
                self.report(d.anchor, "x")

    class Visits(SetUpOnly):
        def visit_Call(self, node) -> None:
            pass

    class OwnInit(SetUpOnly):
        def __init__(self, model, options) -> None:
            super().__init__(model, options)

    class NoCheck(Rule):
        CODE = "VJP991"
        APIS = frozenset({"nnx"})

        def check_derivative(self, d) -> None:
            pass

    class FilledSet(SetUpOnly):
        def check(self) -> None:
            self._seen = set(self.model.derivatives)

    return SetUpOnly, ReadsTheModel, Reports, Visits, OwnInit, NoCheck, FilledSet


def test_the_derivative_gate_takes_only_rules_whose_check_sets_up() -> None:
    from vjplint.rules.registry import derivative_gate

    set_up, reads, reports, visits, own_init, no_check, filled = _rule_classes()
    assert derivative_gate(set_up) == (None, ("vjp",))
    assert derivative_gate(no_check) == (("nnx",), None)
    for cls in (reads, reports, visits, own_init, filled):
        assert derivative_gate(cls) is None, cls.__name__


def test_the_catalog_gates_the_rules_that_only_judge_derivatives() -> None:
    """Every rule of DERIVATIVE_ONLY has no visitor and its own `check_derivative`; VJP301
    (plain functions' registrations, read by `check`) and VJP403 (a visitor) are not in it."""
    from vjplint.rules.base import Rule
    from vjplint.rules.catalog import DERIVATIVE_ONLY

    rules = dict(RULES)
    assert len(DERIVATIVE_ONLY) >= 40
    for code in DERIVATIVE_ONLY:
        rule = rules[code]
        assert rule.RUNTIME or rule.check_derivative is not Rule.check_derivative, code
        assert not any(attr.startswith("visit_") for attr in dir(rule)), code
    assert "VJP301" not in DERIVATIVE_ONLY and "VJP403" not in DERIVATIVE_ONLY and "VJP101" not in DERIVATIVE_ONLY
    assert DERIVATIVE_ONLY["VJP318"] == (("jax",), ("vjp",))


def test_a_module_without_a_derivative_runs_no_derivative_only_rule(monkeypatch) -> None:
    """A module that names `jax.custom_vjp` and `ad.defjvp` in code (JAX's own re-exports and
    `lax.py`'s registrations) but makes no custom derivative: the rules that only judge
    derivatives are not made, and the findings are those of every rule run (the gate emptied)."""
    from vjplint.rules import catalog
    from vjplint.rules.base import Rule

    made = []
    original = Rule.__init__

    def counting(self, model, options):
        made.append(self.CODE)
        original(self, model, options)

    monkeypatch.setattr(Rule, "__init__", counting)
    text = ("from jax.interpreters import ad\nimport jax\n\n"
            "def f(x):\n    return x\n\n"
            "ad.defjvp(f, lambda g, x: g)\n"
            "f.defvjp(lambda x: (x, None), lambda r, g: (g,))\n"
            "jax.jvp(f, (1.0,), (1.0,))\n"
            "help(jax.custom_vjp, jax.custom_jvp)\n")
    gated = [(d.code, d.location.row, d.message) for d in engine.lint_source("m.py", text).diagnostics]
    made_gated = set(made)
    assert made_gated and not made_gated & set(catalog.DERIVATIVE_ONLY)
    made.clear()
    monkeypatch.setattr(catalog, "DERIVATIVE_ONLY", {})
    everything = [(d.code, d.location.row, d.message) for d in engine.lint_source("m.py", text).diagnostics]
    assert gated == everything
    assert set(made) > made_gated
