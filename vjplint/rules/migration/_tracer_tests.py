"""What an expression that tests a value for a tracer class reads: the JVPTracer class itself or the
tracer classes that show grad is handled, the value a type(x).__name__, repr(x) or f-string
describes, and the name literal "JVPTracer" (VJP402)."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.model.file_model import FileModel


NAME = "JVPTracer"
# Tracer classes whose presence in the same test shows the code already handles grad's tracer.
HANDLES_GRAD = ("Tracer", "LinearizeTracer")
TEXT_OF = ("builtins.repr", "builtins.str", "builtins.format")


def is_name_literal(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == NAME


def type_argument(index, expr: ast.expr) -> Optional[ast.expr]:
    """x for `type(x)` or `x.__class__`."""
    if (isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords
            and index.qualname(expr.func) == "builtins.type"):
        return expr.args[0]
    if isinstance(expr, ast.Attribute) and expr.attr == "__class__":
        return expr.value
    return None


def is_jvptracer(model: FileModel, expr: ast.expr) -> bool:
    q = model.index.qualname(expr) or ""
    return q.startswith("jax.") and q.endswith("." + NAME)


def handles_grad(model: FileModel, expr: ast.expr) -> bool:
    q = model.index.qualname(expr) or ""
    return q.startswith("jax.") and q.rsplit(".", 1)[-1] in HANDLES_GRAD


def class_name_of(model: FileModel, expr: ast.expr) -> Optional[ast.expr]:
    """x for `type(x).__name__` or `x.__class__.__name__`."""
    if isinstance(expr, ast.Attribute) and expr.attr in ("__name__", "__qualname__"):
        return type_argument(model.index, expr.value)
    return None


def described_object(model: FileModel, expr: ast.expr) -> Optional[ast.expr]:
    """x for `repr(x)`, `str(x)`, `str(type(x))`, `type(x).__name__`, `f"{x}"`."""
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and model.index.qualname(expr.func) in TEXT_OF:
        inner = expr.args[0]
        return type_argument(model.index, inner) or inner
    if isinstance(expr, ast.JoinedStr):
        values = [v for v in expr.values if isinstance(v, ast.FormattedValue)]
        return values[0].value if len(values) == 1 else None
    return class_name_of(model, expr)
