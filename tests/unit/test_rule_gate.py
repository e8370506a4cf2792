"""The engine's gate by derivative (`engine._apply_rules`): a rule that only judges derivatives
(`check_derivative`, no `check`, no visitor) is not even made for a module without a derivative
of its APIS and KINDS; every other rule the triggers choose runs as before."""

from __future__ import annotations

from typing import List

import pytest

from vjplint.lint.engine import lint_source
from vjplint.rules.base import Rule
from vjplint.rules.registry import rule_class
from vjplint.settings.config import Config

pytestmark = pytest.mark.unit

NO_DERIVATIVE = "import jax\n\nprint(jax.custom_vjp)\n"
ONE_VJP = '''\
import jax


@jax.custom_vjp
def f(x):
    return x


def f_fwd(x):
    return x, None


def f_bwd(_, g):
    return (g,)


f.defvjp(f_fwd, f_bwd)
'''


def made(monkeypatch, text: str) -> List[str]:
    codes: List[str] = []
    real = Rule.__init__

    def init(self, *args) -> None:
        codes.append(self.CODE)
        real(self, *args)

    monkeypatch.setattr(Rule, "__init__", init)
    result = lint_source("module.py", text, Config())
    assert result.errors == [] and result.analysed
    return codes


def test_a_rule_that_only_judges_derivatives_is_not_made_without_one(monkeypatch) -> None:
    codes = made(monkeypatch, NO_DERIVATIVE)
    for code in ("VJP201", "VJP602", "VJP309", "VJP346"):  # check_derivative alone
        assert rule_class(code).check is Rule.check and code not in codes
    assert "VJP101" in codes and "VJP301" in codes  # a `check` of the whole module still runs


def test_it_is_made_where_the_module_holds_a_derivative_of_its_kind(monkeypatch) -> None:
    codes = made(monkeypatch, ONE_VJP)
    assert {"VJP201", "VJP602", "VJP309", "VJP346", "VJP316"} <= set(codes)
    assert "VJP203" in codes  # APIS custom_gradient, jax, nnx: a jax derivative is one
