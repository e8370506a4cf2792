"""Issue 18, the rest: VJP106's default part, VJP603, VJP604, VJP605 and VJP109 follow the tables
that `docs/facts/scripts/hazard_families.py` measured (its saved output is checked against JAX by
tests/unit/test_hazard_families.py, which runs every `hazard_*.py` script)."""

from __future__ import annotations

import textwrap

import pytest

from vjplint.lint import engine
from vjplint.settings.config import Config

SELECTED = Config(extend_select=("VJP106",))
IGNORED = Config(ignore=("VJP106",))


def _found(source: str, code: str, config: Config = Config()) -> list:
    result = engine.lint_source("case.py", textwrap.dedent(source), config)
    return [(d.code, d.location.row) for d in result.diagnostics if d.code == code]


SCALED = '''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_jvp, nondiff_argnums=(1,))
def scaled(x, a):
    return a * jnp.sin(x)

@scaled.defjvp
def scaled_jvp(a, primals, tangents):
    (x,), (t,) = primals, tangents
    return scaled(x, a), a * jnp.cos(x) * t

{caller}
'''

# (caller, hazard_families.py label, fails there): VJP106 reports by default exactly where it fails.
CONTEXTS = [
    ("def step(carry, _):\n    v, m = carry\n    return (scaled(v, m), m), None\n\n"
     "def loss(x, a):\n    return jax.lax.scan(step, (x, a), None, length=1)[0][0].sum()", "A6", True),
    ("def loss(x, a):\n    def step(v, m):\n        return scaled(v, m), None\n"
     "    return jax.lax.scan(step, x, a[None])[0].sum()", "A9", True),
    ("def loss(x, a):\n    def step(v, _):\n        return scaled(v, a), None\n"
     "    return jax.lax.scan(step, x, None, length=1)[0].sum()", "A7", False),
    ("g = jax.grad(lambda x, a: jax.lax.cond(True, scaled, lambda v, m: v, x, a).sum())", "A11", True),
    ("fj = jax.jit(scaled)\njac = jax.jacobian(fj)", "A12", True),
    ("jac = jax.jacrev(jax.jit(scaled))", "A14", True),
    ("g = jax.jit(jax.grad(lambda x, a: scaled(x, a).sum()))", "A2", False),
    ("jac = jax.jit(jax.jacobian(scaled))", "A18", False),
]


@pytest.mark.parametrize("caller, label, fails", CONTEXTS, ids=[c[1] for c in CONTEXTS])
def test_vjp106_is_on_by_default_where_jax_fails(caller, label, fails):
    source = SCALED.format(caller=caller)
    assert _found(source, "VJP106") == ([("VJP106", 7)] if fails else [])
    assert _found(source, "VJP106", SELECTED) == [("VJP106", 7)]  # selected: every array in nondiff
    assert _found(source, "VJP106", IGNORED) == []


def test_vjp106_default_message_names_the_failing_context():
    source = SCALED.format(caller=CONTEXTS[0][0])
    message = next(d.message for d in engine.lint_source("case.py", textwrap.dedent(source)).diagnostics
                   if d.code == "VJP106")
    assert "`lax.scan` body `step`" in message and "UnexpectedTracerError" in message and "#20889" in message


LOG_RULE = '''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.log(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return {out}, t / x
'''

# (primal output, outcome in section B): "ok" right everywhere; "tangent" grad raises and jvp is
# wrong; "cleaned" value_and_grad and downstream gradients silently wrong.
PRIMAL_OUTPUTS = [
    ("f(x)", "ok"), ("jnp.log(x)", "ok"), ("jnp.log(x) + t", "tangent"), ("t / x", "tangent"),
    ("jnp.log(jnp.maximum(x, 1.0))", "cleaned"), ("f(jnp.clip(x, 1.0, 2.0))", "cleaned"),
]


@pytest.mark.parametrize("out, measured", PRIMAL_OUTPUTS)
def test_vjp603_follows_the_measured_table(out, measured):
    source = LOG_RULE.format(out=out)
    found = _found(source, "VJP603")
    assert found == ([] if measured == "ok" else [("VJP603", 12)])
    if found:
        message = engine.lint_source("case.py", textwrap.dedent(source)).diagnostics[0].message
        assert ("from the tangents" in message) == (measured == "tangent")
        assert ("may be silently wrong" in message) == (measured == "cleaned")


RAW_RULE = '''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    {body}

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return {out}, t
'''

# (primal body, rule's primal output, flagged): measured in hazard_heldout_two.py section 2, the
# raw input as the primal output is silently wrong (jvp, value_and_grad, grad downstream) unless
# the primal returns the input itself (or a copy or cast of it).
RAW_OUTPUTS = [
    ("return jnp.round(x)", "x", True), ("return jnp.where(x > 0, 1.0, -1.0)", "primals[0]", True),
    ("y = jnp.floor(x)\n    return y", "x", True), ("return 2.0 * x", "x", True),
    ("return x", "x", False), ("return jnp.asarray(x).astype(jnp.float32)", "x", False),
    ("return jnp.round(x)", "jnp.round(x)", False), ("return jnp.round(x)", "f(x)", False),
    ("return helper(x)", "x", False), ("y = x\n    return y", "x", False),
]


@pytest.mark.parametrize("body, out, flagged", RAW_OUTPUTS)
def test_vjp603_raw_input_as_primal_output(body, out, flagged):
    source = RAW_RULE.format(body=body, out=out)
    found = _found(source, "VJP603")
    assert found == ([("VJP603", 12 + body.count("\n"))] if flagged else [])


def test_vjp603_raw_input_message_and_position():
    source = RAW_RULE.format(body="return jnp.round(x)", out="x")
    (d,) = [d for d in engine.lint_source("case.py", textwrap.dedent(source)).diagnostics if d.code == "VJP603"]
    assert (d.location.row, d.location.column) == (12, 12)
    assert d.message == (
        "the jvp rule `f_jvp` of `f` returns its input `x` unchanged as the primal output, but the primal returns "
        "`jnp.round(x)`: under jvp, grad and value_and_grad the rule's primal output replaces the function's value, "
        "so they see the raw input while eager calls are right, and every gradient downstream is computed at the "
        "wrong value (measured on JAX 0.10.2). Return the function's value (`f(...)` on the primals); a "
        "straight-through estimator changes only the tangent")


def test_vjp603_raw_input_rebound_in_the_rule_is_not_raw():
    source = RAW_RULE.format(body="return jnp.round(x)", out="x").replace(
        "    return x, t", "    x = jnp.round(x)\n    return x, t")
    assert _found(source, "VJP603") == []

ARGUMENT = '''
import jax

@jax.custom_vjp
def apply_vjp(x, cfg):
    return x * 2.0

apply_vjp.defvjp(lambda x, cfg: (x * 2.0, None), lambda _, g: (2.0 * g, None))
y = apply_vjp(0.7, {cfg})
'''

# (argument, section E): strings anywhere in the pytree raise at every call; the rest are valid.
ARGUMENTS = [('"relu"', True), ('{"act": "relu", "w": 1.0}', True), ('(1.0, "mean")', True),
             ("None", False), ("(1.0, None)", False), ("True", False), ('{"w": 1.0}', False)]


@pytest.mark.parametrize("cfg, raises", ARGUMENTS)
def test_vjp109_follows_the_measured_table(cfg, raises):
    assert _found(ARGUMENT.format(cfg=cfg), "VJP109") == ([("VJP109", 9)] if raises else [])


def test_vjp109_ignores_the_same_name_bound_to_a_plain_function():
    source = ARGUMENT.format(cfg="None") + "\n\ndef other():\n    def apply_vjp(x):\n        return x\n" \
                                           "    return jax.jit(apply_vjp)('foo')\n"
    assert _found(source, "VJP109") == []


COMPOSE = '''
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

def plain(x):
    return jnp.sin(x)

{body}
'''

# (construct, code, section D label, fails there)
COMPOSITIONS = [
    ("f = jax.custom_jvp(plain)\nf.defjvp(lambda p, t: (p[0], t[0]))\nf = jax.custom_vjp(f)", "VJP604", "D1", True),
    ("@jax.custom_vjp\n@jax.custom_jvp\ndef g(x):\n    return x", "VJP604", "D2", True),
    ("inner = jax.custom_vjp(plain)\nf = jax.custom_jvp(inner)", "VJP604", "D3", False),
    ("f = jax.custom_vjp(plain)\nf = custom_vmap(f)", "VJP605", "D4", True),
    ("b = custom_vmap(plain)\nf = jax.custom_vjp(lambda x: b(x))", "VJP605", "D5", False),
    ("@custom_vmap\n@jax.custom_vjp\ndef g(x):\n    return x", "VJP605", "D6", True),
]


@pytest.mark.parametrize("body, code, label, fails", COMPOSITIONS, ids=[c[2] for c in COMPOSITIONS])
def test_compositions_follow_the_measured_table(body, code, label, fails):
    assert bool(_found(COMPOSE.format(body=body), code)) == fails


@pytest.mark.parametrize("config, reported", [
    (Config(select=("VJP1",)), True),        # a prefix of the default rules: the default part runs
    (Config(select=("VJP6",)), False),       # VJP106 not selected
    (Config(target="vjp3"), True),           # everything VJP106 finds
    (Config(ignore=("VJP1",)), False),
])
def test_vjp106_default_part_follows_selection(config, reported):
    source = SCALED.format(caller=CONTEXTS[0][0])
    assert bool(_found(source, "VJP106", config)) == reported
