"""The fields a module declares static in its pytree classes: a pytree's metadata, a Python value
inside a traced record, never a tracer (`jax.tree_util.register_dataclass(..., meta_fields=["dim"])`,
flax's `field(pytree_node=False)`, equinox's `field(static=True)`, `static_field()`). Read by the
rules that follow traced values, which must not take `record.dim` for one.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Set

from vjplint.model.file_model import FileModel
from vjplint.facts.registry import query

STATIC_FIELD_WORDS = ("meta_fields", "pytree_node", "static=True", "static_field")


@query
def static_fields(model: FileModel) -> FrozenSet[str]:
    """The names of the fields declared static in the module's pytree classes (once per file)."""
    names: Set[str] = set()
    if not any(model.holds(w) for w in STATIC_FIELD_WORDS):
        return frozenset()
    for node in model.index.of_type(ast.keyword):
        if node.arg == "meta_fields" and isinstance(node.value, (ast.List, ast.Tuple)):
            names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    for node in model.index.of_type(ast.AnnAssign):
        call, target = node.value, node.target
        if not (isinstance(call, ast.Call) and isinstance(target, ast.Name)):
            continue
        callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        flags = {k.arg: k.value for k in call.keywords}
        if callee == "static_field" or any(isinstance(flags.get(k), ast.Constant) and flags[k].value is v
                                           for k, v in (("pytree_node", False), ("static", True))):
            names.add(target.id)
    return frozenset(names)
