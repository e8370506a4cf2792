"""Issue 45 item 5: a nondiff slot that a call of the module proves traced (what VJP104 reports
at the call) makes VJP102's residual-plus-None fix safe and its message certain, from the
verdict's structured evidence (`Evidence.traced_at`), not from message text."""

from __future__ import annotations

import pathlib

from vjplint.diagnostics import Applicability
from vjplint.facts.infer import Hints
from vjplint.lint.engine import lint_source
from vjplint.settings.config import Config

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "rules" / "VJP102"


def _lint(name: str, keep=None):
    path = FIXTURES / name
    return lint_source(str(path), path.read_bytes(), Config(), keep=keep).diagnostics


def test_traced_call_makes_the_fix_safe_and_the_message_certain():
    keep: list = []
    (d,) = [x for x in _lint("fire_traced_factor_call_form.py", keep) if x.code == "VJP102"]
    assert (d.location.row, d.location.column) == (7, 12)
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE
    assert d.message.startswith("`slope` (position 0) is in nondiff_argnums and holds an array at line 25: it is "
                                "used as a factor or in a comparison (`slope * g`, line 16) and receives a traced "
                                "value at line 25 (`slope` is a parameter of `layer`, which is traced by `jax.jit`), "
                                "so JAX raises UnexpectedTracerError there")
    assert "may" not in d.message
    # the structured evidence the rule read: the line of the call VJP104 reports
    model = keep[0]
    (derivative,) = model.derivatives
    (verdict,) = model.facts.verdicts(derivative, Hints())
    assert [e.traced_at for e in verdict.evidence if e.traced_at] == [25]
    vjp104 = [x for x in _lint("fire_traced_factor_call_form.py") if x.code == "VJP104"]
    assert [(x.location.row, x.location.column) for x in vjp104] == [(25, 18)]


def test_without_a_traced_call_the_fix_stays_unsafe_and_the_message_says_may():
    # VJP104 reports the custom function handed whole to `jax.jit` here, not a call passing the
    # slot a traced value: nothing proves this slot traced.
    (d,) = [x for x in _lint("fire_literal_and_array_use.py") if x.code == "VJP102"]
    assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE
    assert "and may be an array" in d.message


def test_any_traced_call_proves_the_slot_not_only_a_single_factor_use():
    """Several array uses (not one weak factor): the traced call VJP104 reports still proves the
    slot traced, through the shared fact `nondiff_traced_call`."""
    keep: list = []
    (d,) = [x for x in _lint("fire_weak_uses_add_up.py", keep) if x.code == "VJP102"]
    assert (d.location.row, d.location.column) == (8, 11)
    assert d.message == ("`rate` (position 0) is in nondiff_argnums and holds an array at line 25: it is used as "
                         "array data in `-rate * x` (line 9), `-rate * x` (line 13), `-rate * y` (line 18), and the "
                         "call there passes it a traced value (`rate` is a parameter of `model`, which is traced by "
                         "`jax.vmap`), so JAX raises UnexpectedTracerError there (VJP104); move it to the residuals "
                         "(bwd returns None for it)")
    model = keep[0]
    (derivative,) = model.derivatives
    assert model.facts.nondiff_traced_call(derivative, 0, "rate")[0] == 25
    vjp104 = [x for x in _lint("fire_weak_uses_add_up.py") if x.code == "VJP104"]
    assert [(x.location.row, x.location.column) for x in vjp104] == [(25, 18)]
