"""The plain-Python evaluator VJP610 reads rules with (vjplint/facts/scalar_eval.py): what it
computes, and that it refuses (Unsupported) whatever it does not read rather than guessing."""

from __future__ import annotations

import ast
import math
import textwrap

import pytest

from vjplint.facts.collect import collect
from vjplint.facts.scalar_eval import UNKNOWN, ScalarEvaluator, Unsupported
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import parse

SOURCE = """
import math
import jax
import jax.numpy as jnp
from jax import lax

EPS = 1e-3
TWICE = 2.0
TWICE = 3.0  # bound twice: not a constant

def helper(z):
    return jnp.tanh(EPS * z)

def body(x, y=0.5):
    a, (b, c) = x * y, (jnp.exp(-x), lax.sin(y))
    a += helper(b)
    return jnp.where(x > y, a, c) + jnp.pi * 0.0

def pair(x):
    return x, (x ** 2, None)

def reduction(x):
    return jnp.sum(x)

def uses_twice(x):
    return TWICE * x

def keyword(x):
    return jnp.clip(x, a_min=0.0)

def branch(x):
    if x > 0:
        return x
    return -x

def log_of(x):
    return jnp.log(x)

def indexed(x):
    return x[0]

def select_guard(x):
    safe = jnp.where(x == 0, 1.0, x)
    return lax.select(x != 0, jnp.sin(safe) / safe, 1.0)

def guarded(primals, tangents):
    (x,), (dx,) = primals, tangents
    safe = jnp.where(x == 0, 1.0, x)
    other = jnp.sum(x)
    for _ in range(2):
        looped = x
    slope = lax.select(x != 0, jnp.sin(safe) / safe, 1.0)
    return slope * dx
"""


@pytest.fixture(scope="module")
def ev():
    text = textwrap.dedent(SOURCE)
    model = collect(parse(text), source_lines(text))
    return ScalarEvaluator(model), {n.name: n for n in model.module.body if isinstance(n, ast.FunctionDef)}


def test_straight_line_bodies_compute_like_numpy(ev):
    evaluator, fns = ev
    x, y = 0.8, 0.5
    a = x * y + math.tanh(1e-3 * math.exp(-x))
    assert evaluator.call(fns["body"], [x, y]) == pytest.approx(a)
    assert evaluator.call(fns["body"], [0.2]) == pytest.approx(math.sin(0.5))  # the default y, the other branch
    assert evaluator.call(fns["pair"], [3.0]) == (3.0, (9.0, None))


@pytest.mark.parametrize("name, args", [
    ("reduction", [1.0]),  # not elementwise
    ("uses_twice", [1.0]),  # a name bound twice
    ("keyword", [1.0]),  # keyword arguments
    ("branch", [1.0]),  # an if statement
    ("log_of", [-1.0]),  # fails on this point's value
    ("indexed", [1.0]),  # an index into an array
])
def test_what_it_does_not_read_is_unsupported(ev, name, args):
    evaluator, fns = ev
    with pytest.raises(Unsupported):
        evaluator.call(fns[name], args)


def test_equality_and_select_only_when_asked(ev):
    evaluator, fns = ev
    with pytest.raises(Unsupported):  # VJP610's evaluator does not read `==` or lax.select
        evaluator.call(fns["select_guard"], [0.5])
    eq = ScalarEvaluator(evaluator.model, equality=True)
    assert eq.call(fns["select_guard"], [0.5]) == pytest.approx(math.sin(0.5) / 0.5)
    assert eq.call(fns["select_guard"], [0.0]) == 1.0


def test_env_at_runs_leniently_and_pins_a_name(ev):
    evaluator, fns = ev
    eq = ScalarEvaluator(evaluator.model, equality=True)
    fn = fns["guarded"]
    stop = fn.body[4]  # slope = lax.select(...)
    env = eq.env_at(fn, {"primals": (0.3,), "tangents": (1.0,)}, stop, {"x": 1e-3})
    assert env["x"] == 1e-3 and env["safe"] == 1e-3  # the pinned value flows into what follows
    assert env["other"] is UNKNOWN and env["looped"] is UNKNOWN and env["_"] is UNKNOWN
    assert eq.value(stop.value.args[1], env) == pytest.approx(math.sin(1e-3) / 1e-3)
    with pytest.raises(Unsupported):
        eq.value(ast.parse("other + 1.0", mode="eval").body, env)


def test_frozen_nodes_take_their_fixed_value(ev):
    evaluator, fns = ev
    eq = ScalarEvaluator(evaluator.model, equality=True)
    fn = fns["select_guard"]
    select = fn.body[-1].value
    eq.frozen = {select: 1.0}
    try:
        assert eq.call(fn, [0.5]) == 1.0
    finally:
        eq.frozen = {}
    assert eq.call(fn, [0.5]) == pytest.approx(math.sin(0.5) / 0.5)
