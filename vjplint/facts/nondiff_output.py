"""What a custom derivative's structure says about a nondiff argument, beyond how it is used:
the primal returns it as (part of) its output, or every argument is nondiff. Both say the value
may be an array that a caller differentiates (`vjplint.facts.infer` weighs them, "may" only)."""

from __future__ import annotations

import ast
from typing import List, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.syntax.walk import walk


def output_reasons(model: FileModel, d: CustomDerivative, position: int, name: str) -> List[Tuple[str, int]]:
    """(reason, line) for the nondiff parameter `name` at `position` of `d`."""
    sig, primal = d.signature, d.primal
    if sig is None or primal is None or d.nondiff_unresolved or _rebound(model, primal, name):
        return []
    found: List[Tuple[str, int]] = []
    for node, value in model.facts.returns_of(primal):
        if _holds(value, name):
            found.append((f"is returned as `{d.name}`'s output (`return {model.quote(value, 40)}`, line "
                          f"{node.lineno}), and a custom function's outputs are JAX arrays: its gradient is then "
                          f"dropped, and a traced value raises", node.lineno))
            break
    # `*args` after the nondiff parameters is differentiable: the rule then defines a derivative.
    if not found and sig.positional and sig.vararg is None and \
            all(i in d.nondiff for i in range(len(sig.positional))) and _used(primal, name):
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        found.append((f"is used by `{d.name}`, whose every argument is in nondiff_argnums: the {kind} defines no "
                      f"derivative for any argument, so whatever a caller differentiates arrives here as a tracer",
                      primal.lineno))
    return found


def _holds(value, name: str) -> bool:
    if isinstance(value, ast.Name):
        return value.id == name
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(isinstance(e, ast.Name) and e.id == name for e in value.elts)
    return False


def _used(fn, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(fn))


def _rebound(model: FileModel, fn, name: str) -> bool:
    scope = model.index.scopes.get(fn)
    bindings = scope.bindings.get(name, []) if scope is not None else []
    return any(b.kind != "param" for b in bindings)
