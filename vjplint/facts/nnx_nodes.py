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
from typing import List, Optional, Tuple

from vjplint.model.jaxapi import ARRAY_NAMESPACES, NNX_VARIABLES
from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.semantic import Scope
from vjplint.facts.kinds import classify_annotation
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query

NNX_MODULE_BASES = frozenset({"flax.nnx.Module", "flax.nnx.module.Module", "flax.nnx.Object", "flax.nnx.Pytree"})
# flax's own Module classes users construct most (all derive from nnx.Module).
NNX_LAYERS = frozenset(f"flax.nnx.{n}" for n in (
    "Linear", "LinearGeneral", "Einsum", "Conv", "ConvTranspose", "Embed", "BatchNorm", "LayerNorm", "RMSNorm",
    "GroupNorm", "InstanceNorm", "Dropout", "MultiHeadAttention", "Sequential", "Rngs", "Optimizer", "LSTMCell",
    "GRUCell", "SimpleCell", "RNN"))
MAX_DEPTH = 4


@query
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


# Attributes and methods of a jax/numpy array: reading one says nothing of a Module.
ARRAY_ATTRS = frozenset({
    "shape", "dtype", "ndim", "size", "T", "mT", "real", "imag", "at", "astype", "reshape", "transpose", "sum",
    "mean", "max", "min", "prod", "std", "var", "squeeze", "ravel", "flatten", "dot", "clip", "conj", "argmax",
    "argmin", "cumsum", "round", "swapaxes", "item", "any", "all", "nbytes", "itemsize", "block_until_ready"})
STATE_CLASSES = frozenset({"flax.nnx.State", "flax.nnx.statelib.State"})


@query
def array_parameter(model: FileModel, d: CustomDerivative, position: int) -> Optional[Tuple[str, bool]]:
    """(evidence, certain) when the primal's parameter at `position` is a plain array, never an nnx
    graph node: annotated as an array (certain), or read as array data in the primal and never as a
    Module, a Variable or a container (not certain: a Variable also supports arithmetic). None when
    anything says or allows that it is a graph node (an nnx annotation, a call site passing one, an
    attribute read `m.w`, a call `m(x)`, `v[...]`, `p["w"]`), or nothing says it is an array."""
    sig = d.signature
    if d.primal is None or sig is None or position >= len(sig.positional) or d.class_node is not None or \
            d.bound_self:
        return None
    name = sig.positional[position]
    for site in d.call_sites:
        call = site.call
        if position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
            if graph_node(model, call.args[position], model.index.scope_of(call)) is not None:
                return None
    params = _parameters(d, position)
    annotated: Optional[str] = None
    for _, param in params:
        if param.annotation is None:
            continue
        if _nnx_annotation(model, param.annotation, model.index.scope_of(param.annotation)):
            return None
        if classify_annotation(model, param.annotation) == "array":
            annotated = f"`{param.arg}` is annotated `{model.quote(param.annotation, 40)}`"
    use: Optional[ast.AST] = None
    for fn, param in params:
        for node in walk(fn):
            if not (isinstance(node, ast.Name) and node.id == param.arg and isinstance(node.ctx, ast.Load)):
                continue
            kind, where = _use_of(model, node)
            if kind == "node":
                return None
            if kind == "array" and use is None:
                use = where
    if annotated is not None:
        return annotated, True
    if use is not None:
        return f"`{name}` is read as array data (`{model.quote(use, 50)}`) and never as a Module", False
    return None


def _functions(d: CustomDerivative) -> List[Tuple[ast.AST, int]]:
    """The primal, then fwd when it is a def or lambda of this file, each with its bound leading args."""
    fwd = d.rule("fwd")
    out: List[Tuple[ast.AST, int]] = [(d.primal, 0)] if d.primal is not None else []
    if out and fwd is not None and fwd.node is not None:
        out.append((fwd.node, fwd.bound_positional))
    return out


def _parameters(d: CustomDerivative, position: int) -> List[Tuple[ast.AST, ast.arg]]:
    """The parameter at `position` of the primal, then of fwd when fwd takes as many arguments."""
    out: List[Tuple[ast.AST, ast.arg]] = []
    count = None
    for fn, skip in _functions(d):
        params = [*fn.args.posonlyargs, *fn.args.args][skip:]  # type: ignore[attr-defined]
        if position >= len(params) or count is not None and len(params) != count:
            break
        count = len(params)
        out.append((fn, params[position]))
    return out


def _use_of(model: FileModel, node: ast.Name) -> Tuple[Optional[str], Optional[ast.AST]]:
    """"node" when this read of a parameter treats it as a Module, Variable or container; "array"
    (and the expression) when it uses it as array data; None otherwise."""
    read, parent = node, model.index.parent(node)
    while isinstance(parent, ast.Subscript) and parent.value is read:
        index = parent.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(p, ast.Constant) and (p.value is Ellipsis or isinstance(p.value, str)) for p in parts):
            return "node", None  # `v[...]` (a Variable's value) or `p["w"]` (a container)
        read, parent = parent, model.index.parent(parent)
    if isinstance(parent, ast.Attribute) and parent.value is read:
        return (None, None) if parent.attr in ARRAY_ATTRS else ("node", None)
    if isinstance(parent, ast.Call) and parent.func is read:
        return "node", None  # `m(x)`
    if isinstance(parent, ast.Call):
        q = model.index.qualname(parent.func) or ""
        if q.startswith("flax."):
            return "node", None  # `nnx.state(m)`, `nnx.split(m)`, ...
        if read in parent.args and q.startswith(ARRAY_NAMESPACES):
            return "array", parent
        return None, None
    if isinstance(parent, (ast.BinOp, ast.Compare)) or isinstance(parent, ast.UnaryOp) and \
            isinstance(parent.op, ast.USub):
        return "array", parent
    return None, None


def _nnx_annotation(model: FileModel, ann: ast.expr, scope: Scope) -> bool:
    """An annotation naming an nnx Module, Variable or State (flax's, or a Module class of this module)."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return False
    for part in walk(ann):
        if not isinstance(part, (ast.Name, ast.Attribute)):
            continue
        q = model.index.qualname(part, scope) or ""
        if q in NNX_MODULE_BASES or q in NNX_LAYERS or q in NNX_VARIABLES or q in STATE_CLASSES or \
                q.startswith("flax.nnx.") and q.rsplit(".", 1)[-1][:1].isupper():
            return True
        if isinstance(part, ast.Name) and _module_class(model, part, scope, 0):
            return True
    return False


@query
def state_call(model: FileModel, expr: ast.expr, fn) -> Optional[ast.Call]:
    """The `nnx.State(...)` call `expr` is, directly or through a name `fn` binds once to one."""
    if isinstance(expr, ast.Call) and model.index.qualname(expr.func) in STATE_CLASSES:
        return expr
    if not isinstance(expr, ast.Name):
        return None
    scope = model.index.scopes.get(fn)
    bindings = scope.bindings.get(expr.id, []) if scope is not None else []
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
        return None
    value = bindings[0].value
    return value if isinstance(value, ast.Call) and model.index.qualname(value.func) in STATE_CLASSES else None
