"""Whether a custom_vjp's differentiable parameter provably has axes (or is a container), read
from how its own code uses it: indexed (`x[1:]`), its `shape` read at a position or unpacked,
`len(x)`, an operand of `@`/`jnp.matmul`, an `einsum` operand with a named term, a reduction or
transpose over named axes, a matrix function of `jnp.linalg`. The primal, fwd (the parameter at
the same position) and bwd (the names fwd's residuals give it) are read, and so are the module's
own functions the parameter is passed to (a few calls deep). A scalar has none of these uses, so
a scalar cotangent for such a parameter fails JAX's check of bwd's output (VJP322).
Linting never imports JAX; this reads the syntax only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.facts.registry import query

# Functions whose first operand needs two axes (a matrix), and `solve`'s right-hand side one.
MATRIX = frozenset("inv cholesky det slogdet eigh eig eigvals eigvalsh svd qr pinv matrix_power lu".split())
REDUCING = frozenset("sum mean max min prod var std amax amin nansum nanmean logsumexp argmax argmin "
                     "cumsum cumprod softmax log_softmax".split())
KEEP_RANK = frozenset({"T", "mT", "real", "imag"})
MAX_DEPTH = 3


@dataclass(frozen=True)
class Axes:
    least: int  # the least number of axes the use needs (1: indexed, which a container allows too)
    why: str    # quotable: "`q` is an `einsum` operand with the term 'sd' (`jnp.einsum(...)` in `_ref`)"


@query
def param_axes(model: FileModel, d: CustomDerivative, param: str) -> Optional[Axes]:
    """The strongest evidence that `d`'s parameter `param` is not a scalar, or None."""
    if d.primal is None:
        return None
    places: List[Tuple[FunctionNode, Set[str]]] = []
    params = model.signature(d.primal).positional
    if param in params:
        places.append((d.primal, {param}))
        fwd = d.rule("fwd")
        if fwd is not None and fwd.node is not None:
            fwd_params = model.signature(fwd.node).positional[fwd.bound_positional:]
            if len(fwd_params) == len(params):
                places.append((fwd.node, {fwd_params[params.index(param)]}))
    contract = model.facts.contract_of(d)
    bwd = d.rule("bwd")
    if contract is not None and bwd is not None and bwd.node is not None:
        names = {name for name, p in contract.aliases if p == param} | \
            {name for name, p in model.facts.saved_parameters(d, contract.params) if p == param}
        if names:
            places.append((bwd.node, names))
    best: Optional[Axes] = None
    for fn, names in places:
        found = _in_function(model, fn, names, 0, set())
        if found is not None and (best is None or found.least > best.least):
            best = found
    return best


def _in_function(model: FileModel, fn: FunctionNode, names: Set[str], depth: int,
                 seen: Set[FunctionNode]) -> Optional[Axes]:
    if fn in seen or depth > MAX_DEPTH:
        return None
    seen.add(fn)
    scope = model.index.scopes.get(fn)
    if scope is None:
        return None
    kept = _cast_in_place(model, fn)
    names = {n for n in names if len([b for b in scope.bindings.get(n, []) if b.node not in kept]) <= 1}
    names |= _aliases(model, fn, names)
    best: Optional[Axes] = None
    where = f" in `{fn.name}`" if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else ""
    for node in model.facts.own_nodes(fn):
        if not isinstance(node, ast.Name) or node.id not in names or not isinstance(node.ctx, ast.Load):
            continue
        found = _use(model, node, where, depth, seen)
        if found is not None and (best is None or found.least > best.least):
            best = found
    return best


def _cast_in_place(model: FileModel, fn: FunctionNode) -> Set[ast.AST]:
    """Assignments that only cast names to themselves (`q, k = q.astype(t), k.astype(t)`): such a
    re-binding keeps the value's axes."""
    kept: Set[ast.AST] = set()
    for node in model.facts.own_nodes(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = list(zip(target.elts, value.elts)) if isinstance(target, ast.Tuple) and \
            isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts) else [(target, value)]
        if all(isinstance(t, ast.Name) and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
               and v.func.attr == "astype" and isinstance(v.func.value, ast.Name) and v.func.value.id == t.id
               for t, v in pairs):
            kept.add(node)
    return kept


def _aliases(model: FileModel, fn: FunctionNode, names: Set[str]) -> Set[str]:
    """Names bound once in `fn` to one of `names` (`a = x`, `a, b = x, y`, `a = x.astype(t)`)."""
    scope = model.index.scopes.get(fn)
    out: Set[str] = set()
    for node in model.facts.own_nodes(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = list(zip(target.elts, value.elts)) if isinstance(target, ast.Tuple) and \
            isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts) else [(target, value)]
        for t, v in pairs:
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "astype":
                v = v.func.value
            if isinstance(t, ast.Name) and isinstance(v, ast.Name) and v.id in names and scope is not None \
                    and len(scope.bindings.get(t.id, [])) == 1:
                out.add(t.id)
    return out


def _use(model: FileModel, node: ast.Name, where: str, depth: int, seen: Set[FunctionNode]) -> Optional[Axes]:
    e: ast.expr = node
    parent = model.index.parent(e)
    for _ in range(4):
        if isinstance(parent, ast.Attribute) and parent.attr in KEEP_RANK:
            e, parent = parent, model.index.parent(parent)
        elif isinstance(parent, ast.Attribute) and parent.attr == "astype":
            call = model.index.parent(parent)
            if not isinstance(call, ast.Call) or call.func is not parent:
                break
            e, parent = call, model.index.parent(call)
        else:
            break
    name = node.id

    def axes(least: int, shown: ast.AST, what: str) -> Axes:
        return Axes(least, f"`{name}` {what} (`{model.quote(shown, 50)}`{where})")

    if isinstance(parent, ast.Subscript) and parent.value is e:
        keys = parent.slice.elts if isinstance(parent.slice, ast.Tuple) else [parent.slice]
        if all(isinstance(k, ast.Constant) and (k.value is None or k.value is Ellipsis) for k in keys):
            return None  # `x[None]`, `x[...]`: a 0-d array allows them
        return axes(1, parent, "is indexed")
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.MatMult):
        return axes(1, parent, "is a matrix-product operand")
    if isinstance(parent, ast.Attribute) and parent.attr == "shape" and e is node:
        return _shape_use(model, parent, axes)
    if isinstance(parent, ast.Call) and parent.func is not e:
        return _call_use(model, parent, e, axes, depth, seen)
    if isinstance(parent, ast.Attribute) and isinstance(model.index.parent(parent), ast.Call) \
            and model.index.parent(parent).func is parent:  # type: ignore[union-attr]
        return _method_use(parent.attr, model.index.parent(parent), axes)  # type: ignore[arg-type]
    return None


def _shape_use(model: FileModel, shape: ast.Attribute, axes) -> Optional[Axes]:
    parent = model.index.parent(shape)
    if isinstance(parent, ast.Subscript) and parent.value is shape:
        k = _int(parent.slice)
        if k is not None:
            return axes(k + 1 if k >= 0 else -k, parent, "has its shape read at a position")
    if isinstance(parent, ast.Assign) and parent.value is shape and len(parent.targets) == 1 \
            and isinstance(parent.targets[0], ast.Tuple) \
            and not any(isinstance(t, ast.Starred) for t in parent.targets[0].elts) and parent.targets[0].elts:
        return axes(len(parent.targets[0].elts), parent, "has its shape unpacked into names")
    return None


def _call_use(model: FileModel, call: ast.Call, e: ast.expr, axes, depth: int,
              seen: Set[FunctionNode]) -> Optional[Axes]:
    q = model.index.qualname(call.func) or ""
    tail = q.rsplit(".", 1)[-1]
    position = next((i for i, a in enumerate(call.args) if a is e), None)
    array_api = q.startswith(("jax.numpy.", "numpy.", "jax.lax."))
    if q == "builtins.len" or isinstance(call.func, ast.Name) and call.func.id == "len" and not q:
        return axes(1, call, "has a length")
    if array_api and tail == "matmul" and position is not None:
        return axes(1, call, "is a matrix-product operand")
    if array_api and tail == "einsum" and position is not None and position >= 1 and call.args \
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        terms = call.args[0].value.replace(" ", "").split("->")[0].split(",")
        if len(terms) == len(call.args) - 1:
            letters = [c for c in terms[position - 1] if c.isalpha()]
            if letters:
                return axes(len(letters), call, f"is an `einsum` operand with the term '{terms[position - 1]}'")
        return None
    if q.startswith(("jax.numpy.linalg.", "numpy.linalg.", "jax.scipy.linalg.")) and position is not None:
        if tail in MATRIX and position == 0 or tail in ("solve", "cho_solve", "solve_triangular") and position == 0:
            return axes(2, call, "is a matrix argument")
        if tail in ("solve", "solve_triangular") and position == 1:
            return axes(1, call, "is a right-hand side")
        if tail == "norm" and position == 0:  # `norm(x, axis=-1)`: reduced over a named axis
            return _axis_arguments(call.args[2:], call.keywords, call, axes, tail)
        return None
    if array_api and position == 0 and tail in REDUCING | {"transpose", "swapaxes", "moveaxis", "take", "flip"}:
        return _axis_arguments(call.args[1:], call.keywords, call, axes, tail)
    if position is not None and not any(isinstance(a, ast.Starred) for a in call.args[:position]) and not q[:4] == "jax.":
        callee = named_function(model.index, call.func)
        if callee is not None and not isinstance(callee, ast.Lambda):
            params = model.signature(callee).positional
            if position < len(params):
                return _in_function(model, callee, {params[position]}, depth + 1, seen)
    for k in call.keywords:
        if k.value is e and k.arg is not None and not q[:4] == "jax.":
            callee = named_function(model.index, call.func)
            if callee is not None and not isinstance(callee, ast.Lambda) \
                    and k.arg in model.signature(callee).positional:
                return _in_function(model, callee, {k.arg}, depth + 1, seen)
    return None


def _method_use(method: str, call: ast.Call, axes) -> Optional[Axes]:
    if method in REDUCING | {"transpose", "swapaxes", "take", "flip"}:
        return _axis_arguments(call.args, call.keywords, call, axes, method)
    return None


def _axis_arguments(args: List[ast.expr], keywords: List[ast.keyword], call: ast.Call, axes,
                    what: str) -> Optional[Axes]:
    """`sum(x, axis=1)` needs 2 axes, `transpose(x, (0, 2, 1))` exactly 3, `swapaxes(x, 0, 2)` 3."""
    kw = {k.arg: k.value for k in keywords}
    if what in ("transpose",):
        perm = args[0] if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)) else \
            kw.get("axes") if not args else None
        items = perm.elts if isinstance(perm, (ast.Tuple, ast.List)) else args
        numbers = [_int(i) for i in items]
        if numbers and all(n is not None for n in numbers):
            return axes(len(numbers), call, "is transposed over named axes")
        return None
    if what == "swapaxes":
        numbers = [_int(a) for a in args[:2]]
    else:
        axis = kw.get("axis", args[0] if args and what != "take" else None)
        if what == "take":
            axis = kw.get("axis", args[1] if len(args) > 1 else None)
        items = axis.elts if isinstance(axis, ast.Tuple) else [axis] if axis is not None else []
        numbers = [_int(i) for i in items]
    if not numbers or any(n is None for n in numbers):
        return None
    least = max(n + 1 if n >= 0 else -n for n in numbers if n is not None)
    return axes(least, call, "is reduced or moved over a named axis") if least >= 1 else None


def _int(e: Optional[ast.expr]) -> Optional[int]:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _int(e.operand)
        return None if inner is None else -inner
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


# jax.numpy functions that take a sequence of arrays (a tuple is fine there).
SEQUENCE_TAKERS = frozenset("array asarray stack hstack vstack dstack column_stack row_stack concatenate block "
                            "broadcast_arrays meshgrid select piecewise ix_ append insert".split())
ARRAY_ATTRIBUTES = frozenset("astype reshape shape dtype T mT ndim size sum mean transpose squeeze ravel flatten "
                             "conj real imag at max min prod".split())


@query
def used_as_array(model: FileModel, fn: FunctionNode, name: str) -> Optional[ast.expr]:
    """The first place where `fn` uses its parameter `name` as one array, which a tuple or list
    would fail: an array attribute (`g.astype`, `g.shape`), arithmetic other than a tuple's own
    (`g @ w`, `-g`, `g / n`, `g * 0.5`), a multi-axis index (`g[:, None]`), an argument of a
    `jax.numpy` or `jax.nn` function that wants an array (`jnp.einsum('ij,j->i', w, g)`), an ordering
    against a number or an array (`g > 0.0`: Python cannot order a tuple against a number), or such a
    use in a function of the module it is passed to. Uses after `name` is re-bound are not read.
    None where it shows none."""
    return _array_use(model, fn, name, 0, set())


def _array_use(model: FileModel, fn: FunctionNode, name: str, depth: int, seen: Set[FunctionNode]) -> Optional[ast.expr]:
    scope = model.index.scopes.get(fn)
    if scope is None or fn in seen or depth > 2:
        return None
    seen.add(fn)
    bindings = scope.bindings.get(name, [])
    if not bindings or bindings[0].kind != "param":
        return None
    rebound = min((getattr(b.node, "lineno", 0) for b in bindings[1:]), default=None)
    found: List[ast.expr] = []
    for node in model.facts.own_nodes(fn):
        if not isinstance(node, ast.Name) or node.id != name or not isinstance(node.ctx, ast.Load) \
                or rebound is not None and node.lineno > rebound:
            continue
        use = _one_use(model, node, depth, seen)
        if use is not None:
            found.append(use)
    return min(found, key=lambda e: (e.lineno, e.col_offset)) if found else None


def _one_use(model: FileModel, node: ast.Name, depth: int, seen: Set[FunctionNode]) -> Optional[ast.expr]:
    parent = model.index.parent(node)
    if isinstance(parent, ast.Attribute) and parent.attr in ARRAY_ATTRIBUTES:
        return parent
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
        return parent
    if isinstance(parent, ast.Subscript) and parent.value is node and (
            isinstance(parent.slice, ast.Tuple) or isinstance(parent.slice, ast.Constant) and parent.slice.value is None):
        return parent
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is node else parent.left
        if isinstance(parent.op, (ast.Sub, ast.Div, ast.MatMult, ast.Pow, ast.FloorDiv)):
            return parent
        if isinstance(parent.op, (ast.Mult, ast.Add)) and _array_operand(model, other):
            return parent
    if isinstance(parent, ast.Compare) and len(parent.ops) == 1 and \
            isinstance(parent.ops[0], (ast.Lt, ast.Gt, ast.LtE, ast.GtE)):
        other = parent.comparators[0] if parent.left is node else parent.left
        if isinstance(other, ast.UnaryOp) and isinstance(other.op, (ast.USub, ast.UAdd)):
            other = other.operand
        number = isinstance(other, ast.Constant) and isinstance(other.value, (int, float)) and \
            not isinstance(other.value, bool)
        if number or _array_operand(model, other):  # `x > 0.0`: a tuple cannot be ordered against a number
            return parent
    if not isinstance(parent, ast.Call):
        return None
    q = model.index.qualname(parent.func) or ""
    if node in parent.args and q.startswith(("jax.numpy.", "jax.nn.")) and q.rsplit(".", 1)[-1] not in SEQUENCE_TAKERS:
        return parent
    if q.startswith("jax.") or not isinstance(parent.func, ast.Name):
        return None
    callee = named_function(model.index, parent.func)
    if callee is None or isinstance(callee, ast.Lambda):
        return None
    params = model.signature(callee).positional
    position = next((i for i, a in enumerate(parent.args) if a is node), None)
    if position is not None and position < len(params) and \
            not any(isinstance(a, ast.Starred) for a in parent.args[:position]):
        return _array_use(model, callee, params[position], depth + 1, seen)
    keyword = next((k.arg for k in parent.keywords if k.value is node), None)
    if keyword is not None and keyword in params:
        return _array_use(model, callee, keyword, depth + 1, seen)
    return None


def _array_operand(model: FileModel, e: ast.expr) -> bool:
    """A float literal or a `jax.numpy` call: a tuple cannot be added to or multiplied by it."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, float)
    return isinstance(e, ast.Call) and (model.index.qualname(e.func) or "").startswith(("jax.numpy.", "jax.nn.",
                                                                                      "jax.lax."))


@query
def axes_in_function(model: FileModel, fn: FunctionNode, name: str) -> Optional[Axes]:
    """The strongest evidence, in `fn` alone (and the module's functions it passes the value to), that its
    parameter `name` has axes: read where a transformation beneath the creator changes what `fn` receives
    (`jnp.vectorize` without `signature` gives it 0-d elements)."""
    return _in_function(model, fn, {name}, 0, set())
