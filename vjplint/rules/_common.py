"""Helpers several rules share: where a nondiff position came from, traced expressions."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.model import CustomDerivative, FileModel, TracedFunction
from vjplint.semantic import FUNCTION_TYPES, FunctionNode

# Attributes of a tracer that are static Python values (shapes are known at trace time).
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "weak_type", "sharding"})
TRACING_MODULES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.")


def nondiff_keyword(model: FileModel, d: CustomDerivative, position: int) -> str:
    """'nondiff_argnums' or 'nondiff_argnames', whichever put `position` there."""
    if "nondiff_argnames" in d.keywords and d.primal is not None:
        from vjplint.collect import constant_value

        names = constant_value(model.index, d.keywords["nondiff_argnames"])
        names = (names,) if isinstance(names, str) else names or ()
        sig = d.signature
        if sig is not None and position < len(sig.positional) and sig.positional[position] in names:
            from_argnums = constant_value(model.index, d.keywords.get("nondiff_argnums", ast.Constant(None)))
            if not (isinstance(from_argnums, (tuple, list)) and position in from_argnums):
                return "nondiff_argnames"
    return "nondiff_argnums"


def describe_traced(traced: TracedFunction) -> str:
    name = getattr(traced.node, "name", "<lambda>")
    return f"`{name}`, which is traced by `{traced.how}`"


def traced_reason(model: FileModel, expr: ast.expr, fn: FunctionNode, traced: TracedFunction,
                  depth: int = 0) -> Optional[str]:
    """Why `expr`, evaluated inside traced `fn`, is a tracer; None when it is not (or unknown)."""
    if depth > 6:
        return None
    if isinstance(expr, ast.Constant):
        return None
    if isinstance(expr, ast.Name):
        scope = model.index.scopes.get(fn)
        bindings = scope.bindings.get(expr.id, []) if scope is not None else []
        if not bindings:
            return None
        if any(b.kind == "param" for b in bindings):
            if expr.id in traced.static_params:
                return None
            return f"`{expr.id}` is a parameter of {describe_traced(traced)}"
        for binding in bindings:
            if binding.kind == "assign" and binding.value is not None:
                inner = traced_reason(model, binding.value, fn, traced, depth + 1)
                if inner is not None:
                    return f"`{expr.id}` is computed from a traced value ({inner})"
        return None
    if isinstance(expr, ast.Attribute):
        if expr.attr in STATIC_ATTRIBUTES:
            return None
        return traced_reason(model, expr.value, fn, traced, depth + 1)
    if isinstance(expr, ast.Subscript):
        if isinstance(expr.value, ast.Attribute) and expr.value.attr in STATIC_ATTRIBUTES:
            return None
        return traced_reason(model, expr.value, fn, traced, depth + 1)
    if isinstance(expr, ast.Call):
        q = model.index.qualname(expr.func) or ""
        if q in ("builtins.len", "builtins.int", "builtins.float", "builtins.bool", "builtins.str",
                 "builtins.isinstance", "builtins.type"):
            return None
        if q.startswith(TRACING_MODULES):
            module = q.rsplit(".", 1)[0]
            return f"`{_short(model, expr)}` is computed with `{module}` inside {describe_traced(traced)}"
        if isinstance(expr.func, ast.Attribute):  # a method of a traced value: `x.max()`
            inner = traced_reason(model, expr.func.value, fn, traced, depth + 1)
            if inner is not None:
                return inner
        for arg in [*expr.args, *(k.value for k in expr.keywords)]:
            inner = traced_reason(model, arg, fn, traced, depth + 1)
            if inner is not None:
                return inner
        return None
    if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List)):
        for child in ast.iter_child_nodes(expr):
            if isinstance(child, ast.expr):
                inner = traced_reason(model, child, fn, traced, depth + 1)
                if inner is not None:
                    return inner
    return None


def _short(model: FileModel, node: ast.AST) -> str:
    from vjplint.infer import _Quoter

    return _Quoter(model)(node, 50)


def function_name(fn: Optional[FunctionNode]) -> str:
    if fn is None or isinstance(fn, ast.Lambda):
        return "<lambda>"
    return fn.name


def is_function(node: ast.AST) -> bool:
    return isinstance(node, FUNCTION_TYPES)
