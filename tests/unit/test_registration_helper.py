"""Rules registered through a module function that calls the method on its parameter (issue 45,
spell6 item 3, the `registration_helper` spelling): `def _register(fn, fwd, bwd): fn.defvjp(fwd,
bwd)` then `_register(f, f_fwd, f_bwd)` registers f's rules as `f.defvjp(f_fwd, f_bwd)` does
(vjplint.facts.collect `_helper_registration`), so they are judged, the custom function is not
"unregistered", and handing it to the helper is no use that hides its callers (VJP602)."""

from __future__ import annotations

import pytest

from vjplint.lint.engine import lint_source
from vjplint.settings.config import Config

pytestmark = pytest.mark.unit

HELPER = '''\
import jax
import jax.numpy as jnp


def _register(fn, fwd, bwd):
    fn.defvjp(fwd, bwd)


@jax.custom_vjp
def f(x, y):
    return x * y


def f_fwd(x, y):
    return x * y, (x, y)


def f_bwd(res, g):
    x, y = res
    return {ret}


_register(f, f_fwd, f_bwd)


def loss(x, y):
    return f(x, y).sum()
'''


def _found(text: str):
    return [(d.location.row, d.location.column, d.code, d.message)
            for d in lint_source("helper.py", text, Config()).diagnostics]


def test_a_rule_registered_through_a_helper_is_judged():
    assert _found(HELPER.format(ret="(g * y,)")) == [(20, 12, "VJP306", (
        "bwd `f_bwd` returns 1 cotangent but `f` has 2 differentiable arguments (x, y); differentiating `f` "
        "raises `TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) "
        "structure as the args tuple of the primal function ...`; return one cotangent (or None) per "
        "differentiable argument, in order"))]


def test_correct_rules_registered_through_a_helper_stay_silent():
    assert _found(HELPER.format(ret="(g * y, g * x)")) == []


def test_a_helper_with_keywords_and_a_jvp_rule():
    text = '''\
import jax
import jax.numpy as jnp


def _register_jvp(fn, jvp):
    fn.defjvp(jvp)


@jax.custom_jvp
def h(x):
    return jnp.sin(x)


def h_jvp(primals):
    (x,) = primals
    return jnp.sin(x), jnp.cos(x)


_register_jvp(fn=h, jvp=h_jvp)
'''
    assert [(r, c, code) for r, c, code, _ in _found(text)] == [(14, 5, "VJP312")]
    assert _found(text.replace("def h_jvp(primals):\n    (x,) = primals\n    return jnp.sin(x), jnp.cos(x)",
                               "def h_jvp(primals, tangents):\n    (x,), (t,) = primals, tangents\n"
                               "    return jnp.sin(x), jnp.cos(x) * t")) == []


def test_a_helper_that_does_more_than_register_on_its_parameter_is_not_read_as_one():
    """Two registrations in the helper, or a rule the helper makes itself from no parameter or
    constant: not read (the function stays as the rest of the linter sees it)."""
    text = HELPER.format(ret="(g * y,)").replace("    fn.defvjp(fwd, bwd)\n",
                                                 "    fn.defvjp(fwd, bwd)\n    fn.defvjp(fwd, bwd)\n")
    assert [code for _, _, code, _ in _found(text)] == []
