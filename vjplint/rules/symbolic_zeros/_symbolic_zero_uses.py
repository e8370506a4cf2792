"""The operations that raise on a jax.custom_derivatives.SymbolicZero (measured on JAX 0.10.2,
docs/facts/scripts/hazard_symbolic_zero_tangent.py): arithmetic, subscripts, array properties and
methods, len, and jnp/lax/nn/scipy calls that read more than the shape; the names and tangents[i]
items that hold one input tangent (Leaf). Read by VJP327."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Optional

from vjplint.model.file_model import FileModel
from vjplint.syntax.walk import walk


# Namespaces whose functions reject a `SymbolicZero` argument (they check for arrays first:
# `multiply requires ndarray or scalar arguments`, `Error interpreting argument to mul as a JAX
# value`; docs/facts/scripts/hazard_symbolic_zero_tangent.py section 2).
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.")
# ... except those that read only the shape and dtype, which a `SymbolicZero` forwards to its
# aval (section 3: all run).
SHAPE_ONLY = frozenset({"zeros_like", "ones_like", "full_like", "empty_like", "shape", "ndim", "size", "result_type",
                        "isscalar"})
# Array properties a `SymbolicZero` forwards to `jnp` (`tx.T`: `transpose requires ndarray ...`).
RAISING_PROPERTIES = frozenset({"T", "mT", "real", "imag"})
# Array methods (`tx.sum()`, `tx.astype(...)`, `tx.reshape(...)` measured: each raises).
ARRAY_METHODS = frozenset({
    "sum", "mean", "astype", "reshape", "transpose", "squeeze", "ravel", "flatten", "conj", "conjugate", "dot",
    "max", "min", "prod", "swapaxes", "cumsum", "cumprod", "clip", "round", "take", "repeat", "var", "std",
    "argmax", "argmin", "all", "any", "item", "tolist", "view", "diagonal", "trace",
})


@dataclass
class Leaf:
    """A name (or `tangents[i]`) holding one input's tangent, or one leaf of it."""

    slot: int  # which differentiable input
    nested: bool  # unpacked from the tangent of a container argument


_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
              ast.Pow: "** or pow()", ast.MatMult: "@"}


def checks_tangent(expr: ast.AST, leaves: Dict[str, Leaf], tangents: str) -> bool:
    """Whether a type check reads a tangent (a leaf name, `tangents[i]`, or the tuple itself)."""
    return any(isinstance(sub, ast.Name) and (sub.id in leaves or sub.id == tangents) for sub in walk(expr))


def tangent_item(expr: ast.AST, tangents: str) -> Optional[int]:
    """`i` for `tangents[i]` with a non-negative int constant."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and expr.value.id == tangents:
        index = expr.slice
        if isinstance(index, ast.Constant) and type(index.value) is int and index.value >= 0:
            return index.value
    return None


def raising_use(model: FileModel, node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> Optional[ast.AST]:
    parent = parents.get(node)
    if isinstance(parent, ast.BinOp):
        return parent
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd, ast.Invert)):
        return parent
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return parent
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if parent.attr in RAISING_PROPERTIES:
            return parent
        call = parents.get(parent)
        if parent.attr in ARRAY_METHODS and isinstance(call, ast.Call) and call.func is parent:
            return call
        return None
    if isinstance(parent, ast.keyword):
        parent = parents.get(parent)
        if not isinstance(parent, ast.Call):
            return None
    if isinstance(parent, ast.Call) and parent.func is not node:
        if isinstance(parent.func, ast.Name) and parent.func.id == "len":
            return parent
        q = model.index.qualname(parent.func) or ""
        if q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] not in SHAPE_ONLY:
            return parent
    return None


def symbolic_zero_error(use: ast.AST) -> str:
    if isinstance(use, ast.BinOp):
        op = _OPERATORS.get(type(use.op))
        if op:
            return f"`TypeError: unsupported operand type(s) for {op}: ... 'SymbolicZero'`"
    return "a TypeError on the `SymbolicZero`"
