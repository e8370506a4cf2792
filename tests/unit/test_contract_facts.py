"""vjplint/facts/contract.py: structures of what rules return, and parameter slots by name."""

from __future__ import annotations

import textwrap

from vjplint.facts.collect import collect
from vjplint.facts.contract import (ARRAY, TUPLE, contract_of, output_cotangent_names, permutation, primal_output,
                                    slot_of, structure, through_wrapper)
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import parse

SOURCE = '''
import jax
import jax.numpy as jnp


def _polar(x):
    return jnp.cos(x), jnp.sin(x)


@jax.custom_jvp
def polar(x, scale):
    return _polar(x * scale)


@jax.custom_jvp
def where_out(x):
    return jnp.where(x > 0, x, 0.0)


def _impl(primals, tangents):
    (x,), (t,) = primals, tangents
    return where_out(x), (t,)


def delegating(primals, tangents):
    return _impl(primals, tangents)


def reordering(primals, tangents):
    return _impl(tangents, primals)


where_out.defjvp(delegating)
'''


def model_of(source: str):
    text = textwrap.dedent(source)
    return collect(parse(text), source_lines(text))


def test_structures_through_helpers_calls_and_where():
    model = model_of(SOURCE)
    polar, where_out = model.derivatives
    out = primal_output(model, polar)
    assert (out.kind, out.length) == (TUPLE, 2)
    assert out.why == "`polar` returns `_polar(x * scale)`"
    out = primal_output(model, where_out)
    assert (out.kind, out.length) == (ARRAY, 1)
    impl = next(n for n in model.module.body if getattr(n, "name", "") == "_impl")
    ret = model.facts.returns_of(impl)[0].value
    assert structure(model, where_out, ret.elts[0], impl, {}).kind == ARRAY
    assert (structure(model, where_out, ret.elts[1], impl, {}).kind, 1) == (TUPLE, 1)


def test_through_wrapper_follows_only_a_delegation_in_order():
    model = model_of(SOURCE)
    fns = {n.name: n for n in model.module.body if hasattr(n, "name") and hasattr(n, "args")}
    assert through_wrapper(model, fns["delegating"]) is fns["_impl"]
    assert through_wrapper(model, fns["reordering"]) is fns["reordering"]
    assert through_wrapper(model, fns["_impl"]) is fns["_impl"]


def test_contract_positions():
    model = model_of(SOURCE.replace("@jax.custom_jvp\ndef polar", "@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))\ndef polar")
                     .replace("import jax\n", "import functools\nimport jax\n", 1))
    c = contract_of(model, model.derivatives[0])
    assert c is not None and (c.params, c.nondiff, c.diff_names) == (("x", "scale"), (1,), ("x",))


def test_slots_by_name():
    params = ("x", "y", "q")
    assert [slot_of(n, params) for n in ("x_dot", "dy", "q_bar", "ct_x", "grad_y", "g_q", "y", "t", "dz")] == \
        ["x", "y", "q", "x", "y", "q", "y", None, None]
    assert slot_of("dx", ("x", "dx")) is None  # `dx` names both: no evidence


def test_permutation_needs_two_misplaced_named_slots():
    assert permutation(["y", "x"], ("x", "y")) == [(0, "y", "x"), (1, "x", "y")]
    assert permutation(["x", "y"], ("x", "y")) is None
    assert permutation(["y", None], ("x", "y")) is None
    assert permutation(["y", "y"], ("x", "y")) is None
    assert permutation(["x", "z", "y"], ("x", "y", "z")) == [(1, "z", "y"), (2, "y", "z")]


NEUTRAL = '''
import jax
import jax.numpy as jnp


@jax.custom_vjp
def passthrough(a0, a1):
    return a0


def passthrough_fwd(a0, a1):
    return a0, a1


def passthrough_bwd(c, r):
    s = r
    t = c
    return c * 1.0, jnp.zeros_like(s)


passthrough.defvjp(passthrough_fwd, passthrough_bwd)
'''


def test_flows_name_the_residual_and_the_output_cotangent():
    """fwd saves `a1` as the residuals themselves, so bwd's `t = c` (c passed first) holds `a1`'s
    value; bwd's last parameter `r` is the output cotangent, shaped like the `a0` the primal returns."""
    text = textwrap.dedent(NEUTRAL)
    model = collect(parse(text), source_lines(text))
    d = model.derivatives[0]
    contract = contract_of(model, d)
    assert contract is not None and ("t", "a1") in contract.aliases
    bwd = d.rule("bwd")
    assert output_cotangent_names(model, d, contract, bwd, bwd.node) == {"r": "a0", "s": "a0"}
