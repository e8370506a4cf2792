"""Which arguments flax nnx treats as graph nodes: Modules, Variables, and States of Variables.

Measured on flax 0.12.8 (docs/facts/nnx-nondiff.md, script `nnx_nondiff_kinds.py`): in
`nnx.custom_vjp`'s default mode (graph=True, graph_updates=True) a graph node in an int
`nondiff_argnums` slot raises `TypeError: Passing integers to nondiff_argnums for graph nodes
arguments in custom_vjp is not supported.` at every call, eager included, even a Module holding no
array; a Python int there behaves as in JAX. What is recognised here is what the source makes
certain: a constructor call of a Variable or of a Module class (flax's own layers, or a class of
this module deriving from `nnx.Module`), `nnx.state(...)`, a State unpacked from `nnx.split(...)`,
and names bound once to one of those.
"""

from __future__ import annotations

import ast
from typing import Optional

from vjplint.jaxapi import NNX_VARIABLES
from vjplint.model import FileModel
from vjplint.semantic import Scope

NNX_MODULE_BASES = frozenset({"flax.nnx.Module", "flax.nnx.module.Module", "flax.nnx.Object", "flax.nnx.Pytree"})
# flax's own Module classes users construct most (all derive from nnx.Module).
NNX_LAYERS = frozenset(f"flax.nnx.{n}" for n in (
    "Linear", "LinearGeneral", "Einsum", "Conv", "ConvTranspose", "Embed", "BatchNorm", "LayerNorm", "RMSNorm",
    "GroupNorm", "InstanceNorm", "Dropout", "MultiHeadAttention", "Sequential", "Rngs", "Optimizer", "LSTMCell",
    "GRUCell", "SimpleCell", "RNN"))
MAX_DEPTH = 4


def graph_node(model: FileModel, expr: ast.expr, scope: Scope, depth: int = 0) -> Optional[str]:
    """What `expr` is, quotable ("`Scale()`, an nnx Module"), when it is certainly an nnx graph
    node; None otherwise (unknown values included)."""
    if depth > MAX_DEPTH:
        return None
    index = model.index
    quoted = f"`{model.quote(expr, 40)}`"
    if isinstance(expr, ast.Call):
        q = index.qualname(expr.func, scope)
        if q in NNX_VARIABLES:
            return f"{quoted}, an nnx Variable"
        if q == "flax.nnx.state":
            return f"{quoted}, an nnx State of Variables"
        if q in NNX_LAYERS or (isinstance(expr.func, ast.Name) and _module_class(model, expr.func, scope, depth)):
            return f"{quoted}, an nnx Module"
        return None
    if not isinstance(expr, ast.Name):
        return None
    bindings = index.lookup(expr.id, scope)
    if len(bindings) != 1 or bindings[0].kind != "assign":
        return None
    binding = bindings[0]
    owner = index.scope_of(binding.node)
    if binding.value is not None:
        found = graph_node(model, binding.value, owner, depth + 1)
        return f"{quoted} ({found})" if found else None
    stmt = binding.node
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and \
            isinstance(stmt.value, ast.Call) and index.qualname(stmt.value.func, owner) == "flax.nnx.split":
        names = [t.id if isinstance(t, ast.Name) else None for t in stmt.targets[0].elts]
        if expr.id in names[1:]:  # `graphdef, state, rest = nnx.split(m, ...)`: every part after the graphdef
            return f"{quoted}, an nnx State of Variables from `{model.quote(stmt.value, 40)}`"
    return None


def _module_class(model: FileModel, name: ast.Name, scope: Scope, depth: int) -> bool:
    """`name` is a class of this module deriving (through classes of this module) from nnx.Module."""
    index = model.index
    bindings = index.lookup(name.id, scope)
    if len(bindings) != 1 or bindings[0].kind != "class" or depth > MAX_DEPTH:
        return False
    cls = bindings[0].node
    assert isinstance(cls, ast.ClassDef)
    outer = index.scope_of(cls)
    for base in cls.bases:
        if index.qualname(base, outer) in NNX_MODULE_BASES:
            return True
        if isinstance(base, ast.Name) and _module_class(model, base, outer, depth + 1):
            return True
    return False
