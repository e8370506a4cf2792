"""Values a jvp rule makes as its primal makes its output: a call of the function the primal
returns a call of, with the same layout of arguments (`_raw_solve(a, b, c)` in both), or a call of
the custom function itself. Such a value has the primal output's pytree structure, whatever that
is, so a container around it, or a pair of it and its tangent, never has it (a pytree is never a
strict subtree of itself). Read by VJP313, VJP333 and VJP338."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.model.file_model import CustomDerivative, FileModel


def primal_like(model: FileModel, d: CustomDerivative, value: Optional[ast.expr]) -> Optional[str]:
    """Why `value` has the primal output's structure (for a message); None when the code does not show it."""
    call = value
    if isinstance(value, ast.Name):
        bindings = model.index.lookup(value.id, model.index.scope_of(value))
        call = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or d.primal is None or any(
            isinstance(a, ast.Starred) for a in call.args):
        return None
    if model.facts.derivative_named(call.func) is d:
        return f"the output of `{d.name}` itself"
    returned = [v for _, v in model.facts.returns_of(d.primal)]
    layout = (call.func.id, len(call.args), sorted(k.arg or "**" for k in call.keywords))
    if not returned or any(not isinstance(v, ast.Call) or not isinstance(v.func, ast.Name) or any(
            isinstance(a, ast.Starred) for a in v.args) or (v.func.id, len(v.args), sorted(
            k.arg or "**" for k in v.keywords)) != layout for v in returned):
        return None
    if model.index.lookup(call.func.id, model.index.scope_of(call.func)) != \
            model.index.lookup(call.func.id, model.index.scope_of(returned[0].func)):  # type: ignore[union-attr]
        return None  # another function of the same name
    return f"a result of `{call.func.id}(...)` as the primal `{d.name}` returns one"
