"""The longer messages of VJP333 (a jvp rule's tangent with another structure than its primal
output), kept apart so the rule module stays short."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.facts.contract import Struct
from vjplint.rules.helpers import rule_label


def _raises(d, rule) -> str:
    return (f"JAX requires the tangent to have the primal output's structure, so differentiating `{d.name}` (jvp, "
            f"grad, jacfwd) raises TypeError \"Custom JVP rule {getattr(rule.called, 'name', '<lambda>')} for function "
            f"{d.name} must produce primal and tangent outputs with equal container (pytree) structures\"")


def none_leaf(rule_obj, d, rule, p: ast.expr, t: ast.expr, tangent_none: bool) -> str:
    """`(y, None), (t, zeros)` or `(y, z), (t, None)`: None is a pytree node with no leaves, an array is one leaf."""
    if tangent_none:
        what = f"the tangent `None` for the primal output `{rule_obj.quote(p, 30)}`, an array"
    else:
        what = f"the tangent `{rule_obj.quote(t, 30)}`, an array, for the primal output `None` in its place"
    return (f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns {what}: None is a pytree node with no "
            f"leaves and an array is one leaf, so the structures differ; {_raises(d, rule)}. " +
            ("Return zeros shaped like that output (float0 zeros for an integer one)"
             if tangent_none else "Return `None` as the tangent of a `None` output"))


def none_tangent(rule_obj, d, rule, primal: Optional[Struct], where: str) -> str:
    """`return out, None`: None is a tangent only for an output that is None itself."""
    known = f", {primal.describe()}," if primal is not None else ""
    return (f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns `None` as its tangent, but "
            f"{where}{known} is not None: None is no \"zero tangent\" in a jvp rule, the tangent must have "
            f"the primal output's structure, so differentiating `{d.name}` (jvp, grad, jacfwd) raises "
            f"TypeError \"Custom JVP rule {getattr(rule.called, 'name', '<lambda>')} for function {d.name} must "
            f"produce primal and tangent outputs with equal container (pytree) structures\". For no "
            f"derivative return zeros shaped like the output (`jnp.zeros_like(...)`; float0 zeros for "
            f"an integer output)")


def whole_tangents(rule_obj, d, rule, primal_expr: ast.expr, tangent_expr: ast.expr, param: str) -> str:
    """`return fn(x), tangents` for one differentiable argument: right only for a 1-tuple output."""
    return (f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns `{rule_obj.quote(tangent_expr, 40)}`, the "
            f"whole tuple of tangents JAX passed, as the tangent of `{rule_obj.quote(primal_expr, 40)}`: `{d.name}` has "
            f"one differentiable argument, so that is a 1-element tuple, the right structure only if the output is "
            f"itself a 1-element tuple; otherwise {_raises(d, rule)}. Return the tangent of the output "
            f"(`{param}[0]` for an identity)")


def float_tangent_message(rule_obj, d, rule, tangent: ast.expr, floated: str, text: str, shown: str, name: str,
                          maybe: bool) -> str:
    """VJP329's message for a float tangent returned for an integer output (JAX wants float0)."""
    return (f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns `{rule_obj.quote(tangent, 40)}` as the "
            f"tangent of the integer output {text} ({shown}); {floated}, but JAX gives an integer or boolean output a "
            f"float0 tangent and rejects a float one, so differentiating `{d.name}` (grad, jvp, jit(grad)) "
            f"{'may raise' if maybe else 'raises'} `TypeError: Custom JVP rule must produce primal and tangent outputs "
            f"with corresponding shapes and dtypes ... expecting tangent float0[]`; return "
            f"`np.zeros(np.shape({name}), dtype=jax.dtypes.float0)` instead")
