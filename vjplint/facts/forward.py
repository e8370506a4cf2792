"""Forward mode: where `jax.linearize`'s linear function is applied (a call of it is a jvp).

VJP315 reads it for a custom_vjp linearized in the same module, vjplint.project.summary for one
linearized in another module of the run."""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.model.semantic import constant_value

# The forward-mode transformations whose function argument meets a custom_vjp (jax-facts §16).
FORWARD = ("jax.jvp", "jax.jacfwd", "jax.linearize", "jax._src.api.jvp", "jax._src.api.jacfwd",
           "jax._src.api.linearize")


def linear_fn_applied(model, call: ast.Call) -> Optional[int]:
    """The line where the linear function of `jax.linearize(...)` (`call`) is used, or None when
    it is not: `jax.linearize(f, x)[1](v)`, or `y, f_lin = jax.linearize(f, x)` and a later read
    of `f_lin` in the same scope."""
    index = model.index
    parent = index.parent(call)
    if isinstance(parent, ast.Subscript) and parent.value is call:
        position = constant_value(index, parent.slice)
        grand = index.parent(parent)
        if position in (1, -1) and isinstance(grand, ast.Call) and grand.func is parent:
            return grand.lineno
        return None
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
        return None
    target = parent.targets[0]
    if not (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
            and isinstance(target.elts[1], ast.Name)):
        return None
    name = target.elts[1].id
    if name == "_":
        return None
    scope = index.scope_of(parent)
    for node in index.names(name):
        if isinstance(node.ctx, ast.Load) and index.inside(node, scope.node):
            if any(b.node is parent for b in index.lookup(name, index.scope_of(node))):
                return node.lineno
    return None
