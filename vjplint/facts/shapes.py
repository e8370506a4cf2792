"""Shape relations of the values a custom rule returns: what the last shape-changing operation
on a returned cotangent or tangent is, and what the primal's code shows of the reference it must
match (an argument for bwd, the primal output for jvp).

`shape_change(e)` reads the outermost operations of `e` (through names bound once, dtype-only
casts, negation and products with a number): a flattening (`v.reshape(-1)`, `v.reshape(v.size)`, `v.ravel()`,
`v.flatten()`, `jnp.ravel(v)`, `jnp.reshape(v, -1)`), a transpose (`v.T`, `v.mT`,
`v.transpose()`, `jnp.transpose(v)`, `jnp.swapaxes(v, ...)`), or a reduction that keeps a size-1
axis (`jnp.sum(v, axis=0, keepdims=True)`). Arithmetic with another array stops it: a reshaped
value multiplied by a full-shape one broadcasts back (`g.reshape(-1, 1) * w` is not a flattening),
so only the outermost change is reported. `made_rank(e)`: the rank an expression provably has by
how it is made (`reshape((n, m))`, `jnp.outer`, `jnp.eye`, `v[:, None]`, `.T` of one of those).
`reshaped_in(fn, param)`: where `fn` (or the module's functions it passes `param` to) reshapes,
flattens or transposes the parameter itself, so a rule that undoes it is right.
`broadcast_partner(fn, param)`: where the parameter itself (cast or indexed) meets, in
elementwise arithmetic, an array computed from nothing of it: the parameter may be broadcast
there, so a reduction of its cotangent with `keepdims=True` may be right (a bias of shape
`(1, n)`). Linting never imports JAX; this reads the syntax only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Literal, Optional, Set

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, named_function

from vjplint.facts.ranks import ELEMENTWISE
from vjplint.facts.registry import query

_ARRAYS = ("jax.numpy.", "numpy.", "jax.lax.")
KEEP_REDUCTIONS = frozenset("sum mean max min prod amax amin nansum nanmean var std logsumexp".split())
_CASTS = frozenset({"astype", "conj", "block_until_ready"})
_CAST_FUNCTIONS = frozenset({"asarray", "array", "negative", "conj", "conjugate", "stop_gradient"})
_LAYOUT = frozenset("dot matmul einsum outer tensordot inner kron".split())
MAX_DEPTH = 6
# Functions of several arrays that broadcast them against each other.
_BROADCASTING = frozenset("""add subtract multiply divide true_divide power maximum minimum where arctan2 hypot
logaddexp clip fmax fmin heaviside copysign""".split())

Kind = Literal["flatten", "transpose", "keepdims", "atleast", "expand"]


@dataclass(frozen=True)
class ShapeChange:
    """The outermost shape-changing operation of a returned value."""

    kind: Kind
    op: ast.expr       # the operation (the call or the `.T` attribute)
    operand: ast.expr  # the value it changes
    axis: Optional[int] = None  # the axis a `keepdims=True` reduction keeps

    def effect(self) -> str:
        if self.kind == "flatten":
            return "flattens it to one axis"
        if self.kind == "transpose":
            return "reverses (or swaps) its axes"
        if self.kind == "atleast":
            return f"gives it at least {self.axis} ax{'is' if self.axis == 1 else 'es'}"
        if self.kind == "expand":
            return "adds an axis to it"
        return f"reduces its axis {self.axis} to length 1 (`keepdims=True`)"


def _adds_axis(index: ast.expr) -> bool:
    """`None` or `jnp.newaxis` in an index (`x[None]`, `x[:, None]`, `x[..., jnp.newaxis]`)."""
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(i, ast.Constant) and i.value is None
               or isinstance(i, ast.Attribute) and i.attr == "newaxis" for i in items)


def _bound(model: FileModel, e: ast.expr) -> ast.expr:
    """The value a name bound once by a plain assignment holds, else `e`."""
    if not isinstance(e, ast.Name):
        return e
    bindings = model.index.lookup(e.id, model.index.scope_of(e))
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None \
            or not isinstance(bindings[0].node, ast.Assign) or len(bindings[0].node.targets) != 1 \
            or not isinstance(bindings[0].node.targets[0], ast.Name):
        return e
    return bindings[0].value


def _int(e: Optional[ast.expr]) -> Optional[int]:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _int(e.operand)
        return None if inner is None else -inner
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _minus_one(e: ast.expr) -> bool:
    """A shape of one axis: `-1`, `v.size`, a number, or a 1-tuple of one of them."""
    if isinstance(e, (ast.Tuple, ast.List)) and len(e.elts) == 1:
        e = e.elts[0]
    return _int(e) is not None or isinstance(e, ast.Attribute) and e.attr == "size"


def _number(model: FileModel, e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool) \
        or isinstance(e, ast.UnaryOp) and _number(model, e.operand)


def _keepdims(call: ast.Call, args: List[ast.expr]) -> Optional[int]:
    """The axis of a reduction with `keepdims=True` over one literal axis (`args` without the operand)."""
    kw = {k.arg: k.value for k in call.keywords}
    keep = kw.get("keepdims")
    if not (isinstance(keep, ast.Constant) and keep.value is True):
        return None
    axis = kw.get("axis", args[0] if args else None)
    return _int(axis)


@query
def shape_change(model: FileModel, e: ast.expr) -> Optional[ShapeChange]:
    """The outermost flattening, transpose or `keepdims` reduction `e` is, or None."""
    for _ in range(MAX_DEPTH):
        e = _bound(model, e)
        if isinstance(e, ast.Attribute) and e.attr in ("T", "mT"):
            return ShapeChange("transpose", e, e.value)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            e = e.operand
            continue
        if isinstance(e, ast.Subscript) and _adds_axis(e.slice):
            return ShapeChange("expand", e, e.value)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div)) and _number(model, e.right):
            e = e.left
            continue
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult) and _number(model, e.left):
            e = e.right
            continue
        if not isinstance(e, ast.Call) or any(isinstance(a, ast.Starred) for a in e.args):
            return None
        q = model.index.qualname(e.func) or ""
        if isinstance(e.func, ast.Attribute) and not q.startswith(_ARRAYS):
            method, value = e.func.attr, e.func.value
            if method in _CASTS:
                e = value
                continue
            if method == "reshape" and len(e.args) == 1 and not e.keywords and _minus_one(e.args[0]) \
                    or method in ("ravel", "flatten") and not e.args and not e.keywords:
                return ShapeChange("flatten", e, value)
            if method == "transpose" and not e.args and not e.keywords or method == "swapaxes":
                return ShapeChange("transpose", e, value)
            if method in KEEP_REDUCTIONS:
                axis = _keepdims(e, e.args)
                return None if axis is None else ShapeChange("keepdims", e, value, axis)
            return None
        if not q.startswith(_ARRAYS) or not e.args:
            return None
        tail, first = q.rsplit(".", 1)[-1], e.args[0]
        if tail in _CAST_FUNCTIONS:
            e = first
            continue
        if tail == "ravel" and len(e.args) == 1 or tail == "reshape" and len(e.args) == 2 and _minus_one(e.args[1]):
            return ShapeChange("flatten", e, first)
        if tail in ("transpose", "matrix_transpose") and len(e.args) == 1 and not e.keywords or tail == "swapaxes":
            return ShapeChange("transpose", e, first)
        if tail in KEEP_REDUCTIONS:
            axis = _keepdims(e, e.args[1:])
            return None if axis is None else ShapeChange("keepdims", e, first, axis)
        if tail in ("atleast_1d", "atleast_2d", "atleast_3d") and len(e.args) == 1 and not e.keywords:
            return ShapeChange("atleast", e, first, int(tail[8]))
        if tail == "expand_dims" and len(e.args) + len(e.keywords) == 2:
            return ShapeChange("expand", e, first)
        return None
    return None


@query
def made_rank(model: FileModel, e: ast.expr, depth: int = 0) -> Optional[int]:
    """The least rank `e` provably has by how it is made, or None."""
    e = _bound(model, e)
    if depth > MAX_DEPTH:
        return None
    if isinstance(e, ast.Attribute) and e.attr in ("T", "mT"):
        return made_rank(model, e.value, depth + 1)
    if isinstance(e, ast.Subscript):
        keys = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        if all(isinstance(k, ast.Slice) or isinstance(k, ast.Constant) and k.value is None for k in keys):
            added = sum(1 for k in keys if isinstance(k, ast.Constant))
            inner = made_rank(model, e.value, depth + 1)
            return max(added + (inner or 0), len(keys)) if added else inner
        return None
    if not isinstance(e, ast.Call):
        return None
    q = model.index.qualname(e.func) or ""
    tail = q.rsplit(".", 1)[-1] if q else (e.func.attr if isinstance(e.func, ast.Attribute) else "")
    if q.startswith(_ARRAYS) and tail == "einsum" and e.args and isinstance(e.args[0], ast.Constant) \
            and isinstance(e.args[0].value, str) and "->" in e.args[0].value:
        out = e.args[0].value.split("->", 1)[1].strip()
        return len(out) if out.isalpha() and len(out) >= 2 else None
    if not q and isinstance(e.func, ast.Name) and not e.keywords:
        d = model.facts.derivative_named(e.func)
        fn = d.primal if d is not None else named_function(model.index, e.func)
        returns = [v for _, v in model.facts.returns_of(fn)] if fn is not None else []
        if len(returns) == 1 and returns[0] is not None:
            return made_rank(model, returns[0], depth + 1)
        return None
    if tail == "reshape":
        shape = e.args if isinstance(e.func, ast.Attribute) and not q.startswith(_ARRAYS) else e.args[1:]
        if len(shape) == 1 and isinstance(shape[0], (ast.Tuple, ast.List)):
            shape = shape[0].elts
        if len(shape) >= 2 and not any(isinstance(s, ast.Starred) for s in shape):
            return len(shape)
        return None
    if q.startswith(_ARRAYS) and tail in ("outer", "eye", "identity", "diag") and e.args:
        return 2 if tail != "diag" or made_rank(model, e.args[0], depth + 1) is None else None
    if q.startswith(_ARRAYS) and tail in ("zeros", "ones", "empty", "full") and e.args and \
            isinstance(e.args[0], (ast.Tuple, ast.List)) and len(e.args[0].elts) >= 2:
        return len(e.args[0].elts)
    return None


@query
def layout_operand(model: FileModel, e: ast.expr) -> bool:
    """Whether `e` is made by something whose layout its author chose: a product (`a @ b`,
    `jnp.einsum`, `jnp.outer`) or a call of a function that is not elementwise (a solver, a
    helper, a library routine: `jnp.swapaxes(solve_sylvester(...), -1, -2)`); a transpose of
    it may be the layout the reference has. Elementwise functions and casts are read through."""
    for _ in range(MAX_DEPTH):
        e = _bound(model, e)
        if isinstance(e, ast.UnaryOp):
            e = e.operand
            continue
        if isinstance(e, ast.BinOp):
            return isinstance(e.op, ast.MatMult)
        if not isinstance(e, ast.Call):
            return False
        q = model.index.qualname(e.func) or ""
        if isinstance(e.func, ast.Attribute) and not q.startswith(_ARRAYS):
            base = e.func.value
            if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Attribute) and base.value.attr == "at":
                e = base.value.value  # `x.at[i].set(v)` keeps `x`'s shape
                continue
            if e.func.attr not in _CASTS:
                return True
            e = base
            continue
        tail = q.rsplit(".", 1)[-1]
        if not q.startswith(_ARRAYS) or tail in _LAYOUT:
            return True
        if tail in _CAST_FUNCTIONS and e.args:
            e = e.args[0]
            continue
        return tail not in ELEMENTWISE and tail not in ("zeros_like", "ones_like", "full_like", "empty_like")
    return False


def _helpers(model: FileModel, fn: FunctionNode, names: Set[str]) -> List[tuple]:
    """(helper, its parameters receiving one of `names` by position) for calls in `fn`."""
    found = []
    for call in model.facts.calls_in(fn):
        callee = named_function(model.index, call.func)
        if callee is None or callee is fn or isinstance(callee, ast.Lambda):
            continue
        params = model.signature(callee).positional
        got = {params[i] for i, a in enumerate(call.args[:len(params)])
               if _mentions(model, a, names)}
        got |= {k.arg for k in call.keywords if k.arg in params and _mentions(model, k.value, names)}
        if got:
            found.append((callee, got))
    return found


def _mentions(model: FileModel, e: ast.expr, names: Set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(e))


def _derived(model: FileModel, fn: FunctionNode, names: Set[str]) -> Set[str]:
    """`names` and the names `fn` assigns from them (a few rounds)."""
    out = set(names)
    assigns = [n for n in model.facts.own_nodes(fn) if isinstance(n, ast.Assign)]
    for _ in range(4):
        grown = False
        for a in assigns:
            if _mentions(model, a.value, out):
                for t in a.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in out:
                            out.add(n.id)
                            grown = True
        if not grown:
            break
    return out


def _reads_in(model: FileModel, fn: FunctionNode, param: str, depth: int, seen: Set[tuple],
              found) -> Optional[ast.expr]:
    if depth > 2 or (fn, param) in seen:
        return None
    seen.add((fn, param))
    mine = _derived(model, fn, {param})
    for node in model.facts.own_nodes(fn):
        hit = found(node, {param}, mine)
        if hit is not None:
            return hit
    for helper, params in _helpers(model, fn, mine):
        for p in sorted(params):
            hit = _reads_in(model, helper, p, depth + 1, seen, found)
            if hit is not None:
                return hit
    return None


@query
def reshaped_in(model: FileModel, fn: FunctionNode, param: str) -> Optional[ast.expr]:
    """Where `fn` (or a function it passes `param` to) reshapes, flattens or transposes `param`."""
    def found(node: ast.AST, own: Set[str], mine: Set[str]) -> Optional[ast.expr]:
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "reshape", "ravel", "flatten", "transpose",
                                                              "swapaxes") and _mentions(model, node.value, own):
            return node
        if isinstance(node, ast.Call) and node.args and _mentions(model, node.args[0], own):
            q = model.index.qualname(node.func) or ""
            if q.startswith(_ARRAYS) and q.rsplit(".", 1)[-1] in ("reshape", "ravel", "transpose", "swapaxes",
                                                                  "moveaxis", "atleast_2d", "expand_dims",
                                                                  "squeeze", "matrix_transpose"):
                return node
        return None
    return _reads_in(model, fn, param, 0, set(), found)


@query
def broadcast_partner(model: FileModel, fn: FunctionNode, param: str) -> Optional[ast.expr]:
    """Where `param` itself (cast or indexed) meets, in elementwise arithmetic, an array computed
    from nothing of it (not a number): `param` may be broadcast there (`x @ w + b`)."""
    def found(node: ast.AST, own: Set[str], mine: Set[str]) -> Optional[ast.expr]:
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Call) and (model.index.qualname(node.func) or "").startswith(_ARRAYS) and \
                (model.index.qualname(node.func) or "").rsplit(".", 1)[-1] in _BROADCASTING:
            operands = [a for a in node.args if not isinstance(a, ast.Starred)]
        else:
            return None
        if not any(_direct(a, own) for a in operands):
            return None
        others = [a for a in operands if not _mentions(model, a, mine)]
        return node if any(not _number(model, a) and not _scalar_name(model, a) for a in others) else None
    return _reads_in(model, fn, param, 0, set(), found)


def _direct(e: ast.expr, names: Set[str]) -> bool:
    """`e` is one of `names`, possibly cast or indexed (`b`, `b.astype(t)`, `b[None]`)."""
    while True:
        if isinstance(e, ast.Name):
            return e.id in names
        if isinstance(e, ast.Subscript):
            e = e.value
        elif isinstance(e, ast.UnaryOp):
            e = e.operand
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _CASTS:
            e = e.func.value
        else:
            return False


def _scalar_name(model: FileModel, e: ast.expr) -> bool:
    """A name the module's value kinds know to be a Python scalar (`eps`, a float default)."""
    if not isinstance(e, ast.Name):
        return False
    return model.facts.values().of(e).tag == "scalar"
