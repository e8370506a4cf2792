"""VJP103 on nnx graph nodes in int nondiff slots (docs/facts/nnx-nondiff.md): in the default mode
a Module, Variable or State there raises TypeError at every call; a Python int, the simple modes
and an unknown mode are left to the JAX rules. Exact codes, positions and messages."""

from __future__ import annotations

import textwrap
from typing import List, Tuple

import pytest

from tests.conftest import lint

HEAD = '''\
import jax.numpy as jnp
from flax import nnx


class Base(nnx.Module):
    pass


class Scale(Base):
    def __init__(self):
        self.w = nnx.Param(jnp.array(3.0))


@nnx.custom_vjp(nondiff_argnums=(0,){mode})
def f(s, x):
    return jnp.sin(x)


f.defvjp(lambda s, x: (f(s, x), None), lambda s, res, g: (g,))
'''
TYPE_ERROR = ("in nnx's default mode (graph=True, graph_updates=True) flax raises `TypeError: Passing integers to "
              "nondiff_argnums for graph nodes arguments in custom_vjp is not supported.` at every call, eager "
              "included; declare `f` with `graph_updates=False` (whose int slots accept graph nodes) or pass it as a "
              "differentiable argument")


def vjp103(body: str, mode: str = "") -> List[Tuple[int, int, str]]:
    source = HEAD.format(mode=mode) + textwrap.dedent(body)
    return [(d.location.row, d.location.column, d.message) for d in lint(source) if d.code == "VJP103"]


def test_a_module_of_this_file_through_a_local_base_class() -> None:
    assert vjp103("y = f(Scale(), 1.0)\n") == [
        (20, 7, f"`Scale()`, an nnx Module, is passed to `s` (position 0) of nnx.custom_vjp `f`, an int "
                f"nondiff_argnums slot: {TYPE_ERROR}")]


def test_a_variable_bound_to_a_name_a_flax_layer_a_state_and_a_split_part() -> None:
    body = '''\
        t = nnx.BatchStat(jnp.array(2.0))
        y1 = f(t, 1.0)
        y2 = f(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), 1.0)
        y3 = f(nnx.state(Scale()), 1.0)
        graphdef, params, rest = nnx.split(Scale(), nnx.Param, ...)
        y4 = f(rest, 1.0)
        '''
    found = vjp103(body)
    assert [(row, col) for row, col, _ in found] == [(21, 8), (22, 8), (23, 8), (25, 8)]
    assert [m.split(", is passed")[0] for _, _, m in found] == [
        "`t` (`nnx.BatchStat(jnp.array(2.0))`, an nnx Variable)",
        "`nnx.Linear(2, 3, rngs=nnx.Rngs(0))`, an nnx Module",
        "`nnx.state(Scale())`, an nnx State of Variables",
        "`rest`, an nnx State of Variables from `nnx.split(Scale(), nnx.Param, ...)`"]


@pytest.mark.parametrize("mode", [", graph_updates=False", ", graph=False", ", graph_updates=flag"])
def test_silent_in_the_simple_modes_and_an_unknown_mode(mode: str) -> None:
    body = "flag = bool(__name__)\ny = f(Scale(), 1.0)\n" if "flag" in mode else "y = f(Scale(), 1.0)\n"
    assert vjp103(body, mode) == []


def test_silent_for_an_int_a_parameter_and_a_rebound_name() -> None:
    body = '''\
        y1 = f(3, 1.0)


        def apply(m, x):
            return f(m, x)


        m = Scale()
        m = 3
        y2 = f(m, 1.0)
        '''
    assert vjp103(body) == []
