"""vjplint/facts/rule_evidence.py: what a custom_vjp's rules show beyond the structures."""

from __future__ import annotations

import textwrap

from vjplint.facts.collect import collect
from vjplint.facts.rule_evidence import (bare_cotangent, canonical, dead_cotangent_value, dropped_cotangent,
                                        returns_primal_output)
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import parse

SOURCE = '''
import jax
import jax.numpy as jnp


def _parts(x, s):
    return x * s, s


@jax.custom_vjp
def scaled(x, s):
    out, _ = _parts(x, s)
    return out


def inline_fwd(a, b):
    return _parts(a, b)[0]


def unpacked_fwd(x, s):
    out, res = _parts(x, s)
    return out


def swapped_fwd(x, s):
    out, _ = _parts(s, x)
    return out


def bound_fwd(cfg, x, s):
    out, res = _parts(x, s)
    return out


def neutral_bwd(r, c):
    u, w = r
    t = c * w
    shape = c.shape
    return None, c * u


def pair_fwd(x, s):
    return _parts(x, s)


def bound_call_fwd(x, s):
    y = scaled(x, s)
    return y


def scaled_bwd(res, g):
    x, s = res
    dx = g * s
    ds = g * x
    return None, ds


def cb_factory(x, handler):
    ident = jax.custom_vjp(lambda v: v)

    def bwd(_, g):
        return handler(g)

    def pulled(_, g):
        return vjp_fn(g)

    return ident, bwd, pulled


scaled.defvjp(unpacked_fwd, scaled_bwd)
'''


def model_of(source: str):
    text = textwrap.dedent(source)
    return collect(parse(text), source_lines(text))


def _fns(model):
    import ast
    return {n.name: n for n in ast.walk(model.module) if isinstance(n, ast.FunctionDef)}


def test_canonical_forms_agree_across_bindings_and_names():
    model = model_of(SOURCE)
    fns = _fns(model)
    ret = {name: model.facts.returns_of(fns[name])[0].value for name in fns}
    primal = canonical(model, fns["scaled"], ret["scaled"])
    assert primal is not None
    assert canonical(model, fns["inline_fwd"], ret["inline_fwd"]) == primal      # `f(...)[0]` and `out, _ = f(...)`
    assert canonical(model, fns["unpacked_fwd"], ret["unpacked_fwd"]) == primal  # another name for the residual
    assert canonical(model, fns["swapped_fwd"], ret["swapped_fwd"]) != primal    # arguments in another order
    assert canonical(model, fns["pair_fwd"], ret["pair_fwd"]) != primal          # the whole pair


def test_returns_primal_output():
    model = model_of(SOURCE)
    fns, d = _fns(model), model.derivatives[0]
    ret = {name: model.facts.returns_of(fns[name])[0].value for name in fns}
    assert "returns the same value" in returns_primal_output(model, d, fns["unpacked_fwd"], ret["unpacked_fwd"])
    assert "a call of `scaled` itself" in returns_primal_output(model, d, fns["bound_call_fwd"], ret["bound_call_fwd"])
    assert returns_primal_output(model, d, fns["pair_fwd"], ret["pair_fwd"]) is None
    assert returns_primal_output(model, d, fns["swapped_fwd"], ret["swapped_fwd"]) is None


def test_dropped_cotangent_reads_the_bwd():
    model = model_of(SOURCE)
    bwd = _fns(model)["scaled_bwd"]
    why = dropped_cotangent(model, bwd, "x", ("x", "s"), "g", "res", all_zero=False)
    assert why is not None and why.startswith("`dx` is computed")
    assert dropped_cotangent(model, bwd, "s", ("x", "s"), "g", "res", all_zero=False) is None  # `ds` is returned


def test_bare_cotangent_callbacks():
    model = model_of(SOURCE)
    fns = _fns(model)
    for name, expected in (("bwd", "`handler`, a function the caller passes in"), ("pulled", None)):
        value = model.facts.returns_of(fns[name])[0].value
        why = bare_cotangent(model, fns[name], value, "g")
        assert (why if why is None else why[:len(expected)]) == expected


def test_partial_bound_arguments_shift_the_positions():
    """`functools.partial(bound_fwd, cfg)`: JAX's first argument is bound_fwd's second parameter."""
    model = model_of(SOURCE)
    fns, d = _fns(model), model.derivatives[0]
    value = model.facts.returns_of(fns["bound_fwd"])[0].value
    primal = canonical(model, fns["scaled"], model.facts.returns_of(fns["scaled"])[0].value)
    assert canonical(model, fns["bound_fwd"], value, bound=1) == primal
    assert canonical(model, fns["bound_fwd"], value) != primal
    assert "returns the same value" in returns_primal_output(model, d, fns["bound_fwd"], value, bound=1)
    assert returns_primal_output(model, d, fns["bound_fwd"], value) is None  # three parameters against two


def test_dead_cotangent_value_is_read_from_use():
    model = model_of(SOURCE)
    fns = _fns(model)
    name, stmt = dead_cotangent_value(model, fns["neutral_bwd"], "c")  # `shape = c.shape` is no value of c
    assert name == "t" and model.quote(stmt) == "t = c * w"
    assert dead_cotangent_value(model, fns["scaled_bwd"], "g")[0] == "dx"  # whatever `dx` is named
    assert dead_cotangent_value(model, fns["pulled"], "g") is None  # nothing assigned
