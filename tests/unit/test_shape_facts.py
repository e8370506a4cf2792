"""`vjplint/facts/shapes.py`: the outermost shape change of a returned value, the rank a value is
made with, a parameter broadcast or reshaped in a function, a transpose's operand laid out by its
author. Each spelling below is read from real source through `model.facts`."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

import pytest

from vjplint.facts.collect import collect

SOURCE = textwrap.dedent('''
    import jax.numpy as jnp

    def f(x, b, w, t, s):
        flat = jnp.ravel(x)
        named = x.reshape(-1).astype(jnp.float32)
        kept = -jnp.sum(x, axis=0, keepdims=True)
        kept_method = (2.0 * x).mean(1, keepdims=True)
        swapped = jnp.swapaxes(x, 0, 1)
        by_size = x.reshape(x.size)
        rows = x.reshape(-1, 1)
        broadcast_back = x.reshape(-1) * w
        summed = jnp.sum(x, axis=0)
        made = x.reshape((2, 3))
        outer = jnp.outer(x, w)
        term = jnp.einsum("ij,jk->ik", x, w)
        column = x[:, None]
        solved = jnp.linalg.solve(w, x)
        cast = jnp.asarray(x * 2.0, jnp.float32)
        product = x @ w
        y = x @ w + b
        z = jnp.where(t > 0, t, 0.0) * 3.0
        m = s.reshape(2, 2)
        return flat, named, kept, kept_method, swapped, by_size, rows, broadcast_back, summed, made, outer, term, \\
            column, solved, cast, product, y, z, m
''')


@pytest.fixture(scope="module")
def model():
    return collect(ast.parse(SOURCE), SOURCE.splitlines(True))


def _load(model, name: str) -> ast.expr:
    """The name as the return statement loads it (what a rule reads)."""
    ret = next(n for n in ast.walk(model.module) if isinstance(n, ast.Return))
    return next(e for e in ret.value.elts if e.id == name)


@pytest.mark.parametrize("name, kind, axis", [
    ("flat", "flatten", None), ("named", "flatten", None), ("kept", "keepdims", 0), ("kept_method", "keepdims", 1),
    ("swapped", "transpose", None), ("by_size", "flatten", None),
    ("rows", None, None), ("broadcast_back", None, None), ("summed", None, None), ("made", None, None),
])
def test_the_outermost_shape_change_is_read_through_names_casts_and_numbers(model, name: str, kind: Optional[str],
                                                                             axis: Optional[int]) -> None:
    change = model.facts.shape_change(_load(model, name))
    assert (change.kind, change.axis) == (kind, axis) if kind else change is None


@pytest.mark.parametrize("name, rank", [("made", 2), ("outer", 2), ("term", 2), ("column", 2), ("flat", None),
                                        ("y", None)])
def test_the_rank_a_value_is_made_with(model, name: str, rank: Optional[int]) -> None:
    assert model.facts.made_rank(_load(model, name)) == rank


@pytest.mark.parametrize("name, laid_out", [("solved", True), ("product", True), ("term", True), ("cast", False),
                                            ("z", False)])
def test_a_transpose_operand_laid_out_by_its_author(model, name: str, laid_out: bool) -> None:
    assert model.facts.layout_operand(_load(model, name)) is laid_out


def test_a_parameter_met_by_an_unrelated_array_may_be_broadcast(model) -> None:
    fn = next(n for n in ast.walk(model.module) if isinstance(n, ast.FunctionDef))
    partner = model.facts.broadcast_partner(fn, "b")
    assert partner is not None and ast.unparse(partner) == "x @ w + b"
    assert model.facts.broadcast_partner(fn, "t") is None  # only numbers and itself: never broadcast
    assert ast.unparse(model.facts.reshaped_in(fn, "s")) == "s.reshape"
    assert model.facts.reshaped_in(fn, "t") is None


AXES_SOURCE = textwrap.dedent('''
    import jax.numpy as jnp
    from jax import lax

    def g(x, v, w, u):
        v = jnp.abs(v)
        u = jnp.atleast_1d(u)
        one = jnp.atleast_1d(x * 2.0)
        two = jnp.atleast_2d(x)
        expanded = jnp.expand_dims(x, 0)
        indexed = x[None]
        newaxis = x[..., jnp.newaxis]
        sliced = x[0]
        pred = lax.cond((x > 0) & (v > 0) if w else x > 0, lambda: x, lambda: -x)
        other = lax.cond(u.sum() > 0, lambda: u, lambda: -u)
        return one, two, expanded, indexed, newaxis, sliced, pred, other
''')


@pytest.fixture(scope="module")
def axes_model():
    return collect(ast.parse(AXES_SOURCE), AXES_SOURCE.splitlines(True))


@pytest.mark.parametrize("name, kind, axis", [("one", "atleast", 1), ("two", "atleast", 2), ("expanded", "expand", None),
                                              ("indexed", "expand", None), ("newaxis", "expand", None),
                                              ("sliced", None, None)])
def test_operations_that_add_axes(axes_model, name: str, kind: Optional[str], axis: Optional[int]) -> None:
    change = axes_model.facts.shape_change(_load(axes_model, name))
    assert (change.kind, change.axis) == (kind, axis) if kind else change is None


def test_a_lax_cond_predicate_shows_its_operands_are_scalars(axes_model) -> None:
    fn = next(n for n in ast.walk(axes_model.module) if isinstance(n, ast.FunctionDef))
    assert ast.unparse(axes_model.facts.scalar_evidence(fn, "x")) == "(x > 0) & (v > 0) if w else x > 0"
    # `v = jnp.abs(v)` keeps `v`'s rank: the predicate shows it too
    assert axes_model.facts.scalar_evidence(fn, "v") is not None
    # `u = jnp.atleast_1d(u)` does not keep it, and `u.sum() > 0` says nothing of `u`; `w` is only the choice
    assert axes_model.facts.scalar_evidence(fn, "u") is None
    assert axes_model.facts.scalar_evidence(fn, "w") is None
