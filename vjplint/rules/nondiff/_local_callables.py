"""Local callables and what they read, for rules about callables passed to a custom derivative
(VJP105): the function a name or lambda passed in a function names, the names it captures from
the enclosing function, and the first numeric use of a name (arithmetic, a comparison, a jnp call)."""

from __future__ import annotations

import ast
from typing import List, Optional

from vjplint.model.file_model import FileModel
from vjplint.model.jaxapi import ARRAY_NAMESPACES
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk


def numeric_use(model: FileModel, fn: ast.AST, name: str) -> Optional[str]:
    """The first arithmetic, comparison or jnp call in `fn` that reads `name`."""
    for node in walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = model.index.parent(node)
        if isinstance(parent, (ast.BinOp, ast.Compare)) or (
                isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)):
            return model.quote(parent, 40)
        if isinstance(parent, ast.Call) and node in parent.args and \
                (model.index.qualname(parent.func) or "").startswith(ARRAY_NAMESPACES):
            return model.quote(parent, 40)
    return None

def local_function(model: FileModel, arg: ast.expr, enclosing: FunctionNode) -> Optional[FunctionNode]:
    if isinstance(arg, ast.Lambda):
        return arg
    if isinstance(arg, ast.Name):
        scope = model.index.scopes.get(enclosing)
        for binding in (scope.bindings.get(arg.id, []) if scope else []):
            if binding.kind == "def":
                return binding.node  # type: ignore[return-value]
            if binding.kind == "assign" and isinstance(binding.value, ast.Lambda):
                return binding.value
    return None

def captured_names(model: FileModel, fn: FunctionNode, enclosing: FunctionNode) -> List[str]:
    outer = model.index.scopes.get(enclosing)
    inner = model.index.scopes.get(fn)
    if outer is None or inner is None:
        return []
    names = []
    for node in walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in names:
            scope = model.index.scope_of(node)
            bindings = model.index.lookup(node.id, scope)
            if bindings and any(b in outer.bindings.get(node.id, []) for b in bindings):
                if all(b.kind not in ("def", "class", "import") for b in bindings):
                    names.append(node.id)
    return names
