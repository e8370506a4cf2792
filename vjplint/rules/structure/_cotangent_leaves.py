"""What a custom_vjp bwd returns, argument by argument, leaf by leaf, through the spellings the
code uses to build it: the returned tuple or list (a literal, a name bound once to one, a call of a
module function whose every return is one: `return _bwd_impl(res, g)`), and inside each argument's
cotangent the leaves of the pytree built for it (a tuple, a list, a dict literal or `dict(...)`, a
call of a class of the module such as a NamedTuple or a dataclass, `tree_map(fn, tree)` whose
leaves are what `fn` returns, both arms of `a if c else b`, a name bound once to any of these).
Read by VJP347 and VJP348."""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, named_function

_TREE_MAPS = frozenset({"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map"})
MAX_DEPTH = 4


def bound_value(model: FileModel, e: ast.expr) -> ast.expr:
    """The value a name bound once by a plain assignment holds (followed a few times), else `e`."""
    for _ in range(MAX_DEPTH):
        if not isinstance(e, ast.Name):
            return e
        bindings = model.index.lookup(e.id, model.index.scope_of(e))
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None \
                or not isinstance(bindings[0].node, ast.Assign) or len(bindings[0].node.targets) != 1 \
                or not isinstance(bindings[0].node.targets[0], ast.Name):
            return e
        e = bindings[0].value
    return e


def module_function(model: FileModel, call: ast.expr) -> Optional[FunctionNode]:
    """The def or lambda of the module a call calls by name (`_impl(...)`), if any."""
    if not isinstance(call, ast.Call):
        return None
    fn = named_function(model.index, call.func)
    return None if fn is None or isinstance(call.func, ast.Lambda) else fn


def returned_values(model: FileModel, bwd: FunctionNode, depth: int = 0) -> List[Tuple[ast.expr, ast.expr]]:
    """(value, where) for each value `bwd` returns: `where` is the node to report, the value
    itself or, for `return helper(...)`, the value inside the helper."""
    found: List[Tuple[ast.expr, ast.expr]] = []
    for _, value in model.facts.returns_of(bwd):
        if value is None:
            continue
        inner = bound_value(model, value)
        helper = module_function(model, inner)
        if helper is not None and helper is not bwd and depth < 2 and model.facts.returns_of(helper):
            found.extend(returned_values(model, helper, depth + 1))
        else:
            found.append((inner, value))
    return found


def elements(model: FileModel, value: ast.expr) -> Optional[List[ast.expr]]:
    """The elements of a returned tuple or list literal (a name bound once to one followed)."""
    value = bound_value(model, value)
    if isinstance(value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in value.elts):
        return list(value.elts)
    return None


def leaves(model: FileModel, e: ast.expr, depth: int = 0) -> Iterator[ast.expr]:
    """The leaves of the pytree `e` builds, as far as the code shows them."""
    if depth > MAX_DEPTH:
        return
    e = bound_value(model, e)
    if isinstance(e, (ast.Tuple, ast.List)):
        for x in e.elts:
            yield from leaves(model, x.value if isinstance(x, ast.Starred) else x, depth + 1)
    elif isinstance(e, ast.Dict):
        for x in e.values:
            yield from leaves(model, x, depth + 1)
    elif isinstance(e, ast.IfExp):
        yield from leaves(model, e.body, depth + 1)
        yield from leaves(model, e.orelse, depth + 1)
    elif isinstance(e, ast.Call) and container_call(model, e):
        for x in [*e.args, *(k.value for k in e.keywords)]:
            yield from leaves(model, x.value if isinstance(x, ast.Starred) else x, depth + 1)
    elif isinstance(e, ast.Call) and (model.index.qualname(e.func) or "") in _TREE_MAPS and e.args:
        fn = named_function(model.index, e.args[0])
        if fn is None:
            yield e
            return
        for _, value in model.facts.returns_of(fn):
            if value is not None:
                yield from leaves(model, value, depth + 1)
    else:
        yield e


def container_call(model: FileModel, call: ast.Call) -> bool:
    """`dict(...)`, or a call of a class of the module (a NamedTuple, a dataclass, a pytree node)."""
    q = model.index.qualname(call.func) or ""
    if q in ("builtins.dict", "builtins.tuple", "builtins.list") and not call.args[1:]:
        return q == "builtins.dict" or bool(call.args) and isinstance(call.args[0], (ast.Tuple, ast.List))
    if isinstance(call.func, ast.Name):
        bindings = model.index.lookup(call.func.id, model.index.scope_of(call.func))
        return len(bindings) == 1 and bindings[0].kind == "class"
    return False


# attributes an array (or a tuple) has: reading one says nothing of a record
_ARRAY_ATTRS = frozenset({"shape", "dtype", "ndim", "size", "T", "mT", "real", "imag", "at", "astype", "reshape",
                          "sum", "mean", "max", "min", "transpose", "squeeze", "ravel", "flatten", "conj", "item",
                          "dot", "clip", "round", "any", "all", "prod", "std", "var", "argmax", "argmin", "cumsum",
                          "nbytes", "itemsize", "weak_type", "sharding", "aval", "count", "index", "value",
                          "block_until_ready", "devices", "copy", "tolist", "view", "swapaxes", "take", "sort"})


def primal_reads(model: FileModel, primal: FunctionNode, name: str) -> Tuple[Dict[str, ast.expr], Dict[str, ast.expr]]:
    """What the primal reads of its parameter `name`, never rebound in it: the string keys of `name["k"]` and the
    attributes of `name.a` that no array or tuple has (a record's fields), each with its first read."""
    keys: Dict[str, ast.expr] = {}
    attrs: Dict[str, ast.expr] = {}
    scope = model.index.scopes.get(primal)
    if scope is None or len(scope.bindings.get(name, [])) != 1:
        return keys, attrs
    for node in model.facts.own_nodes(primal):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            keys.setdefault(node.slice.value, node)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name and \
                node.attr not in _ARRAY_ATTRS and not node.attr.startswith("_"):
            attrs.setdefault(node.attr, node)
    return keys, attrs
