"""Whether the residual-plus-None fix can be offered for a derivative, and how safely."""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Applicability
from vjplint.model import CustomDerivative, FileModel


def residual_fix_offer(model: FileModel, d: CustomDerivative, confident: bool) -> Tuple[Optional[Applicability], str]:
    """(applicability or None, a reason shown when no fix is offered)."""
    if d.kind != "vjp" or d.primal is None:
        return None, "the primal is not resolved in this file"
    fwd, bwd = d.rule("fwd"), d.rule("bwd")
    if len(d.registrations) != 1 or fwd is None or bwd is None:
        return None, "no single defvjp(fwd, bwd) registration in this file"
    if fwd.node is None or bwd.node is None:
        return None, "fwd or bwd is defined in another file"
    if fwd.bound_positional or bwd.bound_positional or fwd.bound_keywords or bwd.bound_keywords:
        return None, "fwd or bwd is a functools.partial"
    if d.nondiff_unresolved:
        return None, "nondiff_argnums is not a literal"
    shared = [o for o in model.derivatives if o is not d and any(
        r is not None and r.node is not None and r.node in (fwd.node, bwd.node) for r in (o.rule("fwd"), o.rule("bwd")))]
    if shared:
        return None, f"fwd/bwd are shared with `{shared[0].name}`"
    for fn in (fwd.node, bwd.node):
        if isinstance(fn, ast.Lambda):
            continue
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn)):
            return None, "fwd or bwd is a generator"
    if not confident:
        return Applicability.UNSAFE, ""
    return (Applicability.SAFE if _returns_are_literal(fwd.node) and _returns_are_literal(bwd.node)
            else Applicability.UNSAFE), ""


def _returns_are_literal(fn: ast.AST) -> bool:
    """Every return is a tuple/list literal (no binding needed to rewrite it)."""
    if isinstance(fn, ast.Lambda):
        return isinstance(fn.body, (ast.Tuple, ast.List))
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, (ast.Tuple, ast.List)) for r in returns)
