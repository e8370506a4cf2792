"""VJP608 follows the table `docs/facts/scripts/hazard_checkify_custom_vjp.py` measured on JAX 0.10.2
(checkify composed with jit around a custom derivative, then differentiated; jax-ml/jax#35871). The
script's saved output is checked against JAX by tests/unit/test_hazard_families.py (every `hazard_*.py`)."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import ROOT
from vjplint.lint import engine

# The measured script's own definitions (its custom derivatives, from `log_cosh` to the last
# custom_jvp), after the imports and names the compositions below use.
_SCRIPT = (ROOT / "docs" / "facts" / "scripts" / "hazard_checkify_custom_vjp.py").read_text(encoding="utf-8")
PRELUDE = """
from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental import checkify

F = checkify.float_checks


""" + _SCRIPT[_SCRIPT.index("@jax.custom_vjp\ndef log_cosh"):_SCRIPT.index("\n\n\ndef user_before")] + "\n\n"


def _found(body: str) -> list:
    source = PRELUDE + textwrap.dedent(body)
    result = engine.lint_source("case.py", source)
    return [d for d in result.diagnostics if d.code == "VJP608"]


def _g(expr: str, errors: str = "checkify.float_checks") -> str:
    """`h = jax.jit(checkify(g, errors=...))` for a function g with one expression."""
    return f"def g(x):\n    return {expr}\n\nh = jax.jit(checkify.checkify(g, errors={errors}))\n"


# (construct, label in hazard_checkify_custom_vjp.py's output, reported: raises there, but for UNREPORTED)
CASES = [
    # 1. the report's shape, staged several ways
    ("h = checkify.checkify(log_cosh, errors=checkify.float_checks)\n"
     "jax.grad(lambda x: jnp.sum(h(x)[1]))(jnp.ones(3))", "checkify(f): grad", False),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.float_checks))", "jit(checkify(f)): grad", True),
    ("h = checkify.checkify(jax.jit(log_cosh), errors=checkify.float_checks)", "checkify(jit(f)): grad", True),
    ("h = jax.checkpoint(checkify.checkify(log_cosh, errors=F))", "checkpoint(checkify(f)): grad", True),
    ("h = jax.jit(jax.vmap(checkify.checkify(log_cosh, errors=F)))", "jit(vmap(checkify(f))): grad", True),
    ("h = jax.vmap(jax.jit(checkify.checkify(log_cosh, errors=F)))", "vmap(jit(checkify(f))): grad", True),
    ("checked = checkify.checkify(log_cosh, errors=F)\nh = jax.jit(checked)", "jit(checkify(f)): grad", True),
    ("h = jax.jit(lambda x: checkify.checkify(log_cosh, errors=F)(x))\n"
     "jax.grad(lambda x: jnp.sum(h(x)[1]))(jnp.ones(3))", "jit(lambda x: checkify(f)(x)): grad", True),
    ("h = jax.jit(lambda x: checkify.checkify(log_cosh, errors=F)(x))\nh(jnp.ones(3))",
     "jit(lambda x: checkify(f)(x)): eager", False),
    # 2. the errors set
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.user_checks))", "errors=user_checks", False),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.nan_checks))", "errors=nan_checks", True),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.div_checks))", "errors=div_checks", False),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.index_checks))", "errors=index_checks", False),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.automatic_checks))", "errors=automatic_checks", True),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.all_checks))", "errors=all_checks", True),
    ("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.all_checks - checkify.float_checks))",
     "errors=all_checks - float_checks", False),
    ("E = checkify.float_checks | checkify.user_checks\nh = jax.jit(checkify.checkify(log_cosh, errors=E))",
     "errors=float_checks | user_checks", True),
    ("h = jax.jit(checkify.checkify(log_cosh))", "errors not given (user_checks)", False),
    # 3. where the check is (custom_vjp)
    ("h = jax.jit(checkify.checkify(neg, errors=F))", "neg, float: no check anywhere", False),
    ("h = jax.jit(checkify.checkify(twice, errors=F))", "twice, float: x * 2.0 inside the primal", True),
    ("h = jax.jit(checkify.checkify(twice, errors=checkify.user_checks))", "twice, user: no check", False),
    ("h = jax.jit(checkify.checkify(neg_checked))", "neg_checked, user: checkify.check inside the primal", True),
    ("h = jax.jit(checkify.checkify(neg_fwd_sin, errors=F))", "neg_fwd_sin, float: jnp.sin only in fwd", False),
    (_g("neg(jnp.sin(x))"), "neg(jnp.sin(x)), float: a check before the call", True),
    (_g("jnp.sin(neg(x))"), "jnp.sin(neg(x)), float: a check after the call", False),
    (_g("neg(x) + jnp.sin(x)"), "neg(x) + jnp.sin(x), float: after, independent", False),
    (_g("neg(jnp.sin(x))", "checkify.all_checks - checkify.float_checks"),
     "neg(jnp.sin(x)), all_checks - float_checks", False),
    ("def g(x):\n    checkify.check(jnp.all(x < 100.0), 'big')\n    return neg(x)\n\nh = jax.jit(checkify.checkify(g))",
     "checkify.check then neg, user", True),
    ("def g(x):\n    y = neg(x)\n    checkify.check(jnp.all(y < 100.0), 'big')\n    return y\n\n"
     "h = jax.jit(checkify.checkify(g))", "neg then checkify.check, user", False),
    ("def g(x):\n    checkify.debug_check(jnp.all(x < 100.0), 'big')\n    return neg(x)\n\n"
     "h = jax.jit(checkify.checkify(g))", "checkify.debug_check then neg, user", True),
    (_g("neg(x / 2.0)", "checkify.div_checks"), "neg(x / 2.0), div", True),
    (_g("neg(x - jnp.mean(x))", "checkify.div_checks"), "neg(x - jnp.mean(x)), div", True),
    (_g("neg(x // 2.0)", "checkify.div_checks"), "neg(x // 2.0), div", False),
    (_g("neg(x * 2.0)", "checkify.div_checks"), "neg(x * 2.0), div: no division", False),
    (_g("neg(jnp.broadcast_to(x[jnp.argmax(x)], (3,)))", "checkify.index_checks"),
     "neg(broadcast(x[jnp.argmax(x)])), index", True),
    (_g("neg(x.at[1].set(0.0))", "checkify.index_checks"), "neg(x.at[1].set(0.0)), index", True),
    (_g("neg(jnp.broadcast_to(jnp.take(x, 1), (3,)))", "checkify.index_checks"),
     "neg(broadcast(jnp.take(x, 1))), index", True),
    (_g("neg(jnp.broadcast_to(x[1], (3,)))", "checkify.index_checks"),
     "neg(broadcast(x[1])), index: a static index", False),
    (_g("neg(jnp.concatenate([x[0:2], x[2:]]))", "checkify.index_checks"),
     "neg(concatenate(x[0:2], x[2:])), index: static slices", False),
    (_g("neg(jnp.reshape(x, (x.shape[0] * 2 // 2,)))"),
     "neg(reshape(x, (x.shape[0] * 2 // 2,))), float: shape arithmetic", False),
    ("h = checkify.checkify(neg_checked)\njax.grad(lambda x: jnp.sum(h(x)[1]))(jnp.ones(3))",
     "neg_checked, user, without jit", False),
    # 4. custom_jvp: only a check inside its primal counts
    ("h = jax.jit(checkify.checkify(jneg, errors=F))", "jneg, float: no check: grad", False),
    (_g("jneg(jnp.sin(x))"), "jneg(jnp.sin(x)), float: a check before the call: grad", False),
    ("def g(x):\n    checkify.check(jnp.all(x < 100.0), 'big')\n    return jneg(x)\n\nh = jax.jit(checkify.checkify(g))",
     "checkify.check then jneg, user: grad", False),
    ("h = jax.jit(checkify.checkify(jsin, errors=F))", "jsin, float: jnp.sin inside the primal: grad", True),
    ("h = jax.jit(checkify.checkify(jneg_checked))", "jneg_checked, user: checkify.check inside the primal: grad",
     True),
    ("h = checkify.checkify(jsin, errors=F)\njax.grad(lambda x: jnp.sum(h(x)[1]))(jnp.ones(3))",
     "jsin, float, without jit: grad", False),
    # 5. jit or control flow inside checkify
    ("h = checkify.checkify(jax.jit(log_cosh), errors=F)", "checkify(jit(log_cosh))", True),
    ("h = checkify.checkify(jax.checkpoint(lambda x: neg(jnp.sin(x))), errors=F)",
     "checkify(checkpoint(neg . sin))", True),
    ("h = checkify.checkify(lambda x: jax.jit(neg)(jnp.sin(x)), errors=F)", "g: jnp.sin, then jit(neg)", True),
    ("jneg_jit = jax.jit(neg)\nh = checkify.checkify(lambda x: jneg_jit(jnp.sin(x)), errors=F)",
     "g: jnp.sin, then jit(neg)", True),
    ("h = checkify.checkify(lambda x: neg(jax.jit(jnp.sin)(x)), errors=F)", "g: jit(jnp.sin), then neg", False),
    ("h = checkify.checkify(lambda x: jax.jit(lambda y: neg(jnp.sin(y)))(x), errors=F)",
     "g: jit(lambda y: neg(jnp.sin(y)))", True),
    ("h = checkify.checkify(lambda x: jax.lax.cond(True, lambda y: neg(jnp.sin(y)), lambda y: y, x), errors=F)",
     "g: lax.cond around neg(jnp.sin(y))", True),
    ("h = checkify.checkify(lambda x: jax.lax.scan(lambda c, y: (c, neg(jnp.sin(y))), 0.0, x)[1], errors=F)",
     "g: lax.scan around neg(jnp.sin(y))", True),
    ("h = checkify.checkify(jax.vmap(lambda x: neg(jnp.sin(x))), errors=F)", "g: vmap(neg . sin)", False),
    # 6. where the differentiation goes
    ("f = lambda x: neg(jnp.sin(x))\nck = checkify.checkify(f, errors=F)\n"
     "jax.jit(jax.grad(lambda x: jnp.sum(ck(x)[1])))(jnp.ones(3))", "jit(grad(checkify(f)))", False),
    ("loss = lambda x: jnp.sum(neg(jnp.sin(x)))\nh = checkify.checkify(jax.grad(loss), errors=F)",
     "checkify(grad(f))", False),
    ("loss = lambda x: jnp.sum(neg(jnp.sin(x)))\nh = jax.jit(checkify.checkify(jax.grad(loss), errors=F))",
     "jit(checkify(grad(f)))", False),
    ("loss = lambda x: jnp.sum(neg(jnp.sin(x)))\nh = jax.jit(checkify.checkify(jax.jit(jax.grad(loss)), errors=F))",
     "jit(checkify(jit(grad(f))))", False),
    ("loss = lambda x: jnp.sum(neg(jnp.sin(x)))\nh = checkify.checkify(jax.grad(jax.jit(loss)), errors=F)",
     "checkify(grad(jit(f)))", False),
    # 7. plain functions: library custom_jvps are measured but not reported (no custom derivative here)
    ("h = jax.jit(checkify.checkify(jax.nn.softplus, errors=F))", "jax.nn.softplus", False),
    # 8. decorators
    ("@jax.jit\n@checkify.checkify\ndef h(x):\n    checkify.check(jnp.all(x < 100.0), 'big')\n    return neg(x)",
     "@jax.jit @checkify.checkify: check, then neg", True),
    ("@jax.jit\n@partial(checkify.checkify, errors=checkify.float_checks)\ndef h(x):\n    return log_cosh(x)",
     "@jax.jit @partial(checkify.checkify, errors=float_checks): log_cosh", True),
    ("@checkify.checkify\n@jax.jit\ndef h(x):\n    checkify.check(jnp.all(x < 100.0), 'big')\n    return neg(x)",
     "@checkify.checkify @jax.jit: check, then neg", True),
    ("@partial(checkify.checkify, errors=checkify.float_checks)\ndef h(x):\n    return log_cosh(x)\n\n"
     "hj = jax.jit(h)", "@jax.jit @partial(checkify.checkify, errors=float_checks): log_cosh", True),
]


# Raises on JAX, but no custom derivative of the module is involved (a library custom_jvp).
UNREPORTED = {"jax.nn.softplus"}


@pytest.mark.parametrize("body, label, raises", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_vjp608_follows_the_measured_table(body, label, raises):
    assert bool(_found(body)) == raises, label


def test_every_label_is_in_the_saved_output():
    """The table above quotes the script's labels and outcomes (RAISE FOREACH or not) as saved."""
    saved = (ROOT / "docs" / "facts" / "scripts" / "out" / "hazard_checkify_custom_vjp.txt").read_text(encoding="utf-8")
    outcomes = {}
    for line in saved.splitlines():
        if line.startswith("#"):
            continue
        label, _, rest = line.partition(" RAISE ") if " RAISE " in line else line.partition(" OK ")
        outcomes[label.strip()] = " RAISE " in line and "foreach()" in rest
    for body, label, raises in CASES:
        assert label in outcomes, label
        assert outcomes[label] == (raises or label in UNREPORTED), label


JITTED_STEP = '''
@jax.jit
def step(x):
    err, y = checked(x)
    return jnp.sum(y)

checked = checkify.checkify(log_cosh, errors=checkify.float_checks)
{use}
'''


@pytest.mark.parametrize("use, reported_row", [
    ("jax.grad(step)(jnp.ones(3))", 8),                                        # grad of the jitted function
    ("def loss(x):\n    return step(x) * 2.0\n\ng = jax.value_and_grad(loss)", 11),  # of a function calling it
    ("step(jnp.ones(3))", None),                                               # not differentiated: runs
    ("jax.jit(jax.grad(lambda x: jnp.sum(checked(x)[1])))", None),             # grad inside the jit: runs
])
def test_a_jitted_function_calling_the_checkified_one_is_reported_where_differentiated(use, reported_row):
    found = _found(JITTED_STEP.format(use=use))
    base = PRELUDE.count("\n")
    assert [d.location.row - base for d in found] == ([] if reported_row is None else [reported_row])


def test_the_message_names_the_evidence_and_the_error():
    (d,) = _found("h = jax.jit(checkify.checkify(log_cosh, errors=checkify.float_checks))")
    assert "custom_vjp `log_cosh`" in d.message and "`jnp.logaddexp(x, -x)`" in d.message
    assert "inside its primal" in d.message
    assert "ValueError: foreach() argument 2 is shorter than argument 1" in d.message
    assert "jax-ml/jax#35871" in d.message
    (d,) = _found(_g("neg(jnp.sin(x))"))
    assert "before the call" in d.message and "`jnp.sin(x)`" in d.message


TRAIN_STEP = '''
def loss_fn(w, x):
    return jnp.sum(log_cosh(w * x))

def train_step(w, x):
    loss, g = jax.value_and_grad(loss_fn)(w, x)
    w = w - 0.1 * g
    return w, log_cosh(w * x)

step = jax.jit(checkify.checkify(train_step, errors=checkify.float_checks))
'''


def test_a_checkified_training_step_is_not_reported():
    """It takes its gradient inside checkify (measured OK) and calls the custom_vjp again; nobody
    differentiates a training step, so the composition is not reported."""
    assert _found(TRAIN_STEP) == []
    assert _found(TRAIN_STEP.replace("step = jax.jit(checkify.checkify(train_step, errors=checkify.float_checks))",
                                     "@jax.jit\n@partial(checkify.checkify, errors=checkify.float_checks)\n"
                                     "def step2(w, x):\n    return jax.grad(loss_fn)(w, x), log_cosh(w * x)")) == []


def test_an_unknown_errors_set_is_not_guessed():
    assert _found("def pick():\n    return checkify.float_checks\n\n"
                  "h = jax.jit(checkify.checkify(log_cosh, errors=pick()))") == []
