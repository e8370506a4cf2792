"""The plain-Python evaluator VJP610 reads rules with (vjplint/facts/scalar_eval.py): what it
computes, and that it refuses (Unsupported) whatever it does not read rather than guessing."""

from __future__ import annotations

import ast
import math
import textwrap

import pytest

from vjplint.collect import collect
from vjplint.facts.scalar_eval import ScalarEvaluator, Unsupported
from vjplint.positions import source_lines
from vjplint.source import parse

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
