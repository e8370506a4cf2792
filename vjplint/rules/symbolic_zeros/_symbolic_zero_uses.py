"""The operations that raise on a jax.custom_derivatives.SymbolicZero (measured on JAX 0.10.2,
docs/facts/scripts/hazard_symbolic_zero_tangent.py): arithmetic, subscripts, array properties and
methods, len, and jnp/lax/nn/scipy calls that read more than the shape; the names and tangents[i]
items that hold one input tangent (Leaf). Read by VJP327."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

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

    slot: int  # which differentiable input; -1: an element of the tangents tuple iterated over (any input)
    nested: bool  # unpacked from the tangent of a container argument
    element: int = -1  # which element of that container (`tx, tgate = tpair`: 0 and 1), when one level down


# Calls that read their arguments as JAX values: a `SymbolicZero` among them raises `TypeError:
# Error interpreting argument to ... as a JAX value` (a custom derivative's own call too).
TRACING_CALLS = frozenset({"jax.jit", "jax.jvp", "jax.linearize", "jax.vjp"})

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


def _passed_whole(node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> Tuple[ast.AST, Optional[ast.AST]]:
    """Climb from a tangent through the tuples and lists holding it, their concatenations
    (`xs[:i] + (t,) + xs[i + 1:]`) and a `*` unpacking: the outermost such node and its parent."""
    parent = parents.get(node)
    concatenated: Set[ast.AST] = set()
    while isinstance(parent, (ast.Tuple, ast.List, ast.Starred)) or (
            isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add) and (
                isinstance(node, (ast.Tuple, ast.List)) or node in concatenated)):
        if isinstance(parent, ast.BinOp):
            concatenated.add(parent)
        node, parent = parent, parents.get(parent)
    return node, parent


def raising_use(model: FileModel, node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> Optional[ast.AST]:
    held, holder = _passed_whole(node, parents)
    if held is not node and isinstance(holder, ast.Call) and holder.func is not held and (
            model.facts.derivative_named(holder.func) is not None or
            (model.index.qualname(holder.func) or "") in TRACING_CALLS):
        return holder  # a custom derivative or jitted call reads its arguments as JAX values: `Error interpreting argument`
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
        if model.facts.derivative_named(parent.func) is not None:
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


# -- the rule's tangents: which names hold which input's tangent, which are checked ---------------
def leaves_of(nodes: List[ast.AST], tangents: str, primals: str
              ) -> Tuple[Dict[str, Leaf], Optional[int], Dict[int, str]]:
    """Names bound to an input's tangent (or one leaf of it) by unpacking `tangents`, or to each
    element by iterating it (`for t in tangents`, `enumerate`, `zip`: slot -1); the number of
    inputs the unpacking shows (None when it does not); the primal names per input."""
    leaves: Dict[str, Leaf] = {}
    primal_names: Dict[int, str] = {}
    slots: List[Optional[int]] = [None]

    def unpack(target: ast.expr, slot: int, nested: bool, element: int = -1) -> None:
        if isinstance(target, ast.Name):
            leaves[target.id] = Leaf(slot, nested, element)
        elif isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
            for i, sub in enumerate(target.elts):
                unpack(sub, slot, True, i if not nested else -2)

    def bind(target: ast.expr, value: ast.expr) -> None:
        if isinstance(value, ast.Name) and value.id == tangents:
            if isinstance(target, (ast.Tuple, ast.List)) and not any(
                    isinstance(e, ast.Starred) for e in target.elts):
                slots[0] = len(target.elts)
                for i, element in enumerate(target.elts):
                    unpack(element, i, False)
            return
        if isinstance(value, ast.Name) and value.id == primals:
            if isinstance(target, (ast.Tuple, ast.List)):
                for i, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        primal_names[i] = element.id
            return
        index = tangent_item(value, tangents)
        if index is not None:
            unpack(target, index, False)
            return
        if isinstance(value, ast.Name) and value.id in leaves and isinstance(target, (ast.Tuple, ast.List)):
            container = leaves.pop(value.id)  # `tx0, tx1 = tx`: a container's leaves are the tangents
            unpack(target, container.slot, container.nested)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(
                target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                bind(t, v)

    for node in sorted((n for n in nodes if isinstance(n, ast.Assign)), key=lambda n: (n.lineno, n.col_offset)):
        for target in node.targets:
            bind(target, node.value)
    for node in nodes:
        if isinstance(node, (ast.For, ast.comprehension)):
            element = iterated_element(node.target, node.iter, tangents)
            if element is not None:
                leaves[element.id] = Leaf(-1, False)
    return leaves, slots[0], primal_names


def iterated_element(target: ast.expr, iterable: ast.expr, tangents: str) -> Optional[ast.Name]:
    """The name each tangent is bound to by `for t in tangents`, `for i, t in enumerate(tangents)`
    or `for x, t in zip(primals, tangents)`."""
    if isinstance(iterable, ast.Name) and iterable.id == tangents:
        return target if isinstance(target, ast.Name) else None
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and not iterable.keywords):
        return None
    if iterable.func.id == "enumerate" and len(iterable.args) == 1 and isinstance(iterable.args[0], ast.Name) \
            and iterable.args[0].id == tangents and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        element = target.elts[1]
        return element if isinstance(element, ast.Name) else None
    if iterable.func.id == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args):
        for arg, element in zip(iterable.args, target.elts):
            if isinstance(arg, ast.Name) and arg.id == tangents and isinstance(element, ast.Name):
                return element
    return None


def tangents_only_unpacked(nodes: List[ast.AST], tangents: str, parents: Dict[ast.AST, ast.AST]) -> bool:
    """Whether `tangents` is only unpacked (`a, b = tangents`, `... = primals, tangents`), indexed
    with a constant (`tangents[0]`) or iterated element by element; anything else (a call, a
    return of the whole tuple) may hold the guard."""
    for node in nodes:
        if not (isinstance(node, ast.Name) and node.id == tangents):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and tangent_item(parent, tangents) is not None:
            continue
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node and \
                iterated_element(parent.target, node, tangents) is not None:
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("enumerate", "zip"):
            loop = parents.get(parent)
            if isinstance(loop, (ast.For, ast.comprehension)) and loop.iter is parent and \
                    iterated_element(loop.target, parent, tangents) is not None:
                continue
        while isinstance(parent, (ast.Tuple, ast.List)):
            parent = parents.get(parent)
        if isinstance(parent, ast.Assign):  # in the value: the parameter is never a target (bound once)
            continue
        return False
    return True


def guarded(nodes: List[ast.AST], tangents: str) -> Tuple[List[ast.AST], Set[object]]:
    """The expressions the rule checks the type of (`isinstance(t, ...)`, `type(t)`,
    `t.__class__`), and the names (and `(slot, None)` for `tangents[i]`) read by those checks or
    by a test (`if`, `while`, conditional expression, `assert`)."""
    checked: List[ast.AST] = []
    marked: Set[object] = set()

    def mark(expr: ast.AST) -> None:
        for sub in walk(expr):
            if isinstance(sub, ast.Name):
                marked.add(sub.id)
            index = tangent_item(sub, tangents)
            if index is not None:
                marked.add((index, None))

    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "isinstance", "type") and node.args:
            checked.append(node.args[0])
            mark(node.args[0])
        elif isinstance(node, ast.Attribute) and node.attr == "__class__":
            checked.append(node.value)
            mark(node.value)
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            mark(node.test)
    return checked, marked


def leaf_of(node: ast.AST, leaves: Dict[str, Leaf], tangents: str) -> Tuple[Optional[Leaf], str]:
    if isinstance(node, ast.Name) and node.id in leaves and isinstance(node.ctx, ast.Load):
        return leaves[node.id], node.id
    index = tangent_item(node, tangents)
    if index is not None:
        return Leaf(index, False), f"{tangents}[{index}]"
    return None, ""
