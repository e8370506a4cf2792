"""vjplint.values: the kinds the engine infers, and the chains it quotes."""

from __future__ import annotations

import ast
import textwrap

from vjplint.collect import collect
from vjplint.values import ARRAY, CALLABLE, SCALAR, TUPLE, UNKNOWN, Kind, join


def _kinds(source: str, line: int):
    text = textwrap.dedent(source)
    module = ast.parse(text)
    model = collect(module, text.splitlines(True))
    values = model.facts.values()
    found = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.lineno == line:
            found[node.id] = values.of(node)
    return found


HEADER = """\
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(n, x):
    return x * n

def f_fwd(n, x):
    y = jnp.sin(x)
    return y, (y, 2)

def f_bwd(n, res, g):
    y, k = res
    return (g * y * k,)

f.defvjp(f_fwd, f_bwd)
"""


def test_roles_residuals_and_unpacking() -> None:
    kinds = _kinds(HEADER, 15)  # return (g * y * k,)
    assert kinds["g"].tag == ARRAY and "cotangent" in kinds["g"].why
    assert kinds["y"].tag == ARRAY
    assert kinds["y"].why == "`y` is unpacked from `res` at line 14"
    assert kinds["k"].tag == SCALAR and kinds["k"].dtype == "int"
    assert _kinds(HEADER, 7)["n"].tag == UNKNOWN  # the nondiff slot itself is what the verdict decides


def test_tracer_chain_through_a_helper_and_a_tuple() -> None:
    source = HEADER + """
def stats(v):
    return jnp.mean(v), jnp.std(v)

@jax.jit
def step(v):
    m, s = stats(v)
    return f(s, v)
"""
    s = _kinds(source, 25)["s"]
    assert s.tag == ARRAY
    assert s.traced == ("`s` is unpacked from `stats(v)` at line 24; `jnp.std(v)` is computed from a traced value "
                        "(`v` is a parameter of `step`, which is traced by `jax.jit`)")


def test_callable_carries_its_captures_through_grad_and_partial() -> None:
    source = """
import functools
import jax
import jax.numpy as jnp

def solve(theta, x0):
    objective = lambda x: jnp.sum((x - theta) ** 2)
    g = jax.grad(objective)
    p = functools.partial(objective, x0)
    return g, p
"""
    kinds = _kinds(source, 10)
    assert kinds["g"].tag == CALLABLE and [n for n, _ in kinds["g"].captures] == ["theta"]
    assert kinds["p"].tag == CALLABLE and [n for n, _ in kinds["p"].captures] == ["theta", "argument 1 of the partial"]


def test_self_attributes_and_callers_of_a_class() -> None:
    source = """
import jax.numpy as jnp

class Model:
    def __init__(self, scale, w):
        self.scale = scale
        self.w = jnp.ones(w)

    def apply(self, x):
        return self.scale * x + self.w

MODEL = Model(1.5, 3)
"""
    values = _kinds(source, 10)
    module = ast.parse(textwrap.dedent(source))
    model = collect(module, textwrap.dedent(source).splitlines(True))
    attrs = [n for n in ast.walk(module) if isinstance(n, ast.Attribute) and n.lineno == 10]
    kinds = {a.attr: model.facts.values().of(a) for a in attrs}
    assert kinds["scale"].tag == SCALAR and kinds["scale"].dtype == "float"
    assert kinds["w"].tag == ARRAY and kinds["w"].why == "`self.w` = `jnp.ones(w)` at line 7"
    assert values["self"].tag == "module"


def test_jvp_rule_primals_are_a_tuple_of_arrays() -> None:
    source = """
from functools import partial
import jax

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def f(c, x):
    return c * x

@f.defjvp
def f_jvp(c, primals, tangents):
    (x,), (t,) = primals, tangents
    return f(c, x), c * t
"""
    assert _kinds(source, 11)["primals"].tag == TUPLE
    kinds = _kinds(source, 12)
    assert kinds["x"].tag == ARRAY and kinds["t"].tag == ARRAY


def test_join_is_precision_first() -> None:
    a, s = Kind(ARRAY, "float"), Kind(SCALAR, "int")
    assert join(a, Kind(ARRAY, "int")).tag == ARRAY and join(a, Kind(ARRAY, "int")).dtype is None
    assert join(a, s).tag == "maybe"
    assert join(a, Kind(UNKNOWN)).tag == UNKNOWN
    assert join(Kind(ARRAY, traced="x"), Kind(ARRAY)).traced is None
