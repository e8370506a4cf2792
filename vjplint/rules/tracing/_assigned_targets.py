"""Assignment shapes read by rules that follow what a rule function assigns (VJP202): each target with
the value it receives (through tuple unpacking and `tree_flatten`'s (leaves, treedef) pair), the
name an attribute or subscript chain starts from, and `x.at[i]` chains (functional updates, not
mutation)."""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple


def flatten_targets(targets: List[ast.expr], value: Optional[ast.expr]) -> Iterator[Tuple[ast.expr, Optional[ast.expr]]]:
    """Each assigned target with the expression it receives, when that is known."""
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            values: List[Optional[ast.expr]] = [None] * len(target.elts)
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                values = list(value.elts)
            elif is_tree_flatten(value) and len(target.elts) == 2:
                values = [None, ast.Constant(None)]  # (leaves, treedef): the treedef is static
            for element, element_value in zip(target.elts, values):
                yield from flatten_targets([element], element_value)
        elif isinstance(target, ast.Starred):
            yield from flatten_targets([target.value], None)
        else:
            yield target, value


def is_tree_flatten(value: Optional[ast.expr]) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("tree_flatten", "flatten")


def root_name(expr: ast.expr) -> Optional[ast.Name]:
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None


def has_at_update(expr: ast.expr) -> bool:
    """`x.at[i]` chains are functional updates of arrays, not mutation."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Attribute) and expr.attr == "at":
            return True
        expr = expr.value
    return False
