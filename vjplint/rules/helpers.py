"""Wording shared by rule messages (no analysis here: facts live in `vjplint.facts`)."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.facts import Arity, plural
from vjplint.model import RuleFunction
from vjplint.semantic import FunctionNode

# JAX's error when bwd's output does not match the primal's positional arguments.
BWD_TREE = ("`TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) structure "
            "as the args tuple of the primal function ...`")


def function_name(fn: Optional[FunctionNode]) -> str:
    if fn is None or isinstance(fn, ast.Lambda):
        return "<lambda>"
    return fn.name


def rule_label(rule: RuleFunction, role: str) -> str:
    """'fwd `f_fwd`' or 'the fwd lambda'."""
    if rule.name:
        return f"{role} `{rule.name}`"
    if isinstance(rule.node, ast.Lambda):
        return f"the {role} lambda"
    return role


def python_arity_error(label: str, arity: Arity, n: int) -> str:
    """Python's own TypeError text for calling a function of `arity` with `n` positional arguments."""
    if arity.accepts(n) and arity.kwonly_required:
        missing = [f"'{m}'" for m in arity.kwonly_required]
        listed = missing[0] if len(missing) == 1 else (
            " and ".join(missing) if len(missing) == 2 else ", ".join(missing[:-1]) + ", and " + missing[-1])
        return (f"TypeError: {label}() missing {plural(len(missing), 'required keyword-only argument')}: "
                f"{listed}")
    if arity.maximum is not None and n > arity.maximum:
        shift = arity.bound  # Python counts bound leading arguments too
        low, high = arity.required + shift, arity.maximum + shift
        takes = f"{low}" if low == high else f"from {low} to {high}"
        word = "argument" if high == 1 and low == high else "arguments"
        were = "was" if n + shift == 1 else "were"
        return f"TypeError: {label}() takes {takes} positional {word} but {n + shift} {were} given"
    missing = [name for name in arity.names[n:] if name not in arity.defaulted]
    quoted = [f"'{m}'" for m in missing]
    listed = quoted[0] if len(quoted) == 1 else (
        " and ".join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
    return f"TypeError: {label}() missing {plural(len(missing), 'required positional argument')}: {listed}"
