"""What reaches the inputs of a reverse-mode gradient: where `jax.grad(f)` is applied, with what.

`jax.grad(f)` and `jax.value_and_grad(f)` check their inputs and output at the call of the
gradient function (api.py `_check_input_dtype_revderiv`, `_check_scalar`, census rows E42 and
E43 of docs/facts/jax-errors.md): a differentiated input must be inexact, the output a scalar.
Whether they are is decided by the arguments the gradient function is called with, which the
module often shows: `jax.grad(model)(jnp.linspace(0, 1, 5))`, `dmodel = jax.grad(model)` called
later, `jax.jit(jax.grad(model))(xs)`, the inputs a helper's parameters (or its `*args`) receive
from every call of the helper in the module, a tuple a function of the module returns.

`grad_applications(model)` lists each gradient made and called in the module with the argument
expressions of its call (`*args` spread where the module shows the sequence); `least_rank(expr)`
is the least rank an expression provably has (0: a scalar or unknown), read through names bound
once, parameters given by every call of their function in the module, array constructors,
elementwise functions, reductions with `axis=`, matmuls, and the returns of the module's own
functions and custom primals evaluated at their arguments' ranks; `least_output_rank(fn, ranks)`
is that of every return of `fn` when its positional parameters have those ranks; `integer_input`
why an input is an integer or bool (a literal, `arange` of ints, an int dtype), through the same
names and callers. Linting never imports JAX: this reads the syntax only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from vjplint.facts.registry import query
from vjplint.facts.ranks import ELEMENTWISE, REDUCTIONS
from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, named_function

GRADS = frozenset({"jax.grad", "jax.value_and_grad"})
JACOBIANS = frozenset({"jax.jacrev", "jax.jacfwd", "jax.hessian"})  # check their inputs' dtype as grad does
WRAPPERS = frozenset({"jax.jit", "jax.checkpoint", "jax.remat"})  # keep the gradient function's inputs/output
MAPS = frozenset({"jax.vmap", "jax.pmap"})  # keep the inputs' dtypes, drop an axis of their ranks
_ARRAYS = ("jax.numpy.", "numpy.")
_SHAPED = frozenset({"zeros", "ones", "empty", "full"})
_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "asarray", "array", "copy"})
_RANGES = frozenset({"linspace", "arange", "logspace", "geomspace"})
_RANDOM = ("jax.random.", "numpy.random.")
_MATMUL = frozenset({"matmul", "dot"})
DEPTH = 8
Frames = Tuple[Tuple[FunctionNode, Tuple[Tuple[str, int], ...]], ...]  # the ranks of called functions' parameters


@dataclass(frozen=True, eq=False)
class GradApplication:
    grad: ast.Call  # `jax.grad(f, ...)` (or `jax.jacrev`, `jax.jacfwd`, `jax.hessian`)
    transform: str  # its qualname
    target: ast.expr  # `f`
    applied: ast.Call  # the call of the gradient function
    args: Tuple[Tuple[ast.expr, ...], ...]  # per input position, what every route passes there
    argnums: Optional[Tuple[int, ...]]  # None: not a literal
    mapped: bool = False  # under `jax.vmap`/`jax.pmap`: the inputs' dtypes hold, not their ranks

    def keyword(self, name: str) -> Optional[ast.expr]:
        return next((k.value for k in self.grad.keywords if k.arg == name), None)


@query
def grad_applications(model: FileModel) -> List[GradApplication]:
    """Each `jax.grad`/`jax.value_and_grad` (and `jacrev`/`jacfwd`/`hessian`) of the module called
    with inputs it shows."""
    index = model.index
    found: List[GradApplication] = []
    for call in model.facts.calls_in(model.module):
        transform = index.qualname(call.func) or ""
        if transform not in GRADS and transform not in JACOBIANS or not call.args or \
                any(k.arg is None for k in call.keywords):
            continue
        outer: ast.expr = call
        parent = index.parent(outer)
        mapped = False
        while isinstance(parent, ast.Call) and parent.args and parent.args[0] is outer and \
                (index.qualname(parent.func) or "") in WRAPPERS | MAPS:
            mapped = mapped or (index.qualname(parent.func) or "") in MAPS
            outer, parent = parent, index.parent(parent)
        for applied in _applications(model, outer):
            args = _positions(model, applied.args, 0)
            if args is not None:
                found.append(GradApplication(call, transform, call.args[0], applied, args, _argnums(call), mapped))
    return found


def _argnums(call: ast.Call) -> Optional[Tuple[int, ...]]:
    value = next((k.value for k in call.keywords if k.arg == "argnums"), None)
    if value is None:
        value = call.args[1] if len(call.args) > 1 else ast.Constant(0)
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    if all(isinstance(i, ast.Constant) and type(i.value) is int for i in items):
        return tuple(i.value for i in items)  # type: ignore[union-attr]
    return None


def _applications(model: FileModel, made: ast.expr) -> List[ast.Call]:
    """The calls of the gradient function `made`: `made(...)` itself, or `name(...)` for a name
    bound once to it."""
    index = model.index
    parent = index.parent(made)
    if isinstance(parent, ast.Call) and parent.func is made:
        return [parent]
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
        return []
    name = parent.targets[0].id
    scope = index.scope_of(parent.targets[0])
    if len(scope.bindings.get(name, [])) != 1:
        return []
    calls = []
    for use in index.names(name):
        site = index.parent(use)
        if isinstance(site, ast.Call) and site.func is use:
            found = index.resolve(name, index.scope_of(use))
            if found is not None and found[0] is scope:
                calls.append(site)
    return calls


class Open(tuple):
    """Positions of which only the first are known (a `*seq` spread last whose `seq` the module
    shows only in part: `a = list(args); a[0] = v`); an empty entry: unknown."""


class _OpenList(list):
    pass


def _positions(model: FileModel, args: List[ast.expr], depth: int) -> Optional[Tuple[Tuple[ast.expr, ...], ...]]:
    """Per position, the expressions passed there (a `*seq` spread where the module shows `seq`;
    None where it does not; an `Open` tuple where it shows its first items only)."""
    out: List[Tuple[ast.expr, ...]] = []
    for at, arg in enumerate(args):
        if isinstance(arg, ast.Starred):
            spread = _sequence(model, arg.value, depth + 1)
            if spread is None:
                return None
            out.extend(spread)
            if isinstance(spread, _OpenList):
                return Open(out) if at == len(args) - 1 else None
        else:
            out.append((arg,))
    return tuple(out)


def _sequence(model: FileModel, e: ast.expr, depth: int) -> Optional[List[Tuple[ast.expr, ...]]]:
    """The items of a sequence the module shows: a literal, `tuple(...)`/`list(...)` of one, a name
    bound once to one, a function of the module returning one, or a `*args` parameter (what every
    call of its function in the module passes there)."""
    if depth > DEPTH:
        return None
    index = model.index
    if isinstance(e, (ast.Tuple, ast.List)):
        items = _positions(model, e.elts, depth)
        return (_OpenList if isinstance(items, Open) else list)(items) if items is not None else None
    if isinstance(e, ast.Call):
        q = index.qualname(e.func) or ""
        if q in ("builtins.tuple", "builtins.list") and len(e.args) == 1 and not e.keywords:
            return _sequence(model, e.args[0], depth + 1)
        fn = named_function(index, e.func)
        if fn is not None and not isinstance(fn, ast.Lambda):
            returns = [v for _, v in model.facts.returns_of(fn)]
            seqs = [_sequence(model, v, depth + 1) if v is not None else None for v in returns]
            if not seqs or any(s is None for s in seqs) or len({len(s) for s in seqs}) != 1:  # type: ignore[arg-type]
                return None
            return [tuple(x for s in seqs for x in s[i]) for i in range(len(seqs[0]))]  # type: ignore[index]
        return None
    if isinstance(e, ast.Name):
        found = index.resolve(e.id, index.scope_of(e))
        if found is None or len(found[1]) != 1:
            return None
        binding = found[1][0]
        if binding.kind == "assign" and binding.value is not None:
            return _stored(model, e, binding, _sequence(model, binding.value, depth + 1))
        fn = found[0].node
        if binding.kind == "param" and isinstance(fn, FUNCTION_TYPES) and model.signature(fn).vararg == e.id:
            first = len(model.signature(fn).positional)
            spreads = [_positions(model, c.args, depth + 1) for c in _callers(model, fn)]
            if not spreads or any(s is None or isinstance(s, Open) for s in spreads) or \
                    len({len(s) for s in spreads}) != 1:  # type: ignore[arg-type]
                return None
            return [tuple(x for s in spreads for x in s[i]) for i in range(first, len(spreads[0]))]  # type: ignore[index]
    return None


def _stored(model: FileModel, use: ast.Name, binding, items: Optional[List[Tuple[ast.expr, ...]]]
            ) -> Optional[List[Tuple[ast.expr, ...]]]:
    """`items` of the list a name is bound to, with what the statements of the binding's own block
    before `use` write into it: `a[0] = v` (replacing item 0; under an `if` or a loop, adding `v`
    as an option) and `a.append(v)` (in the block itself). A list shown only by such writes
    (`a = list(args)` of unknown `args`) is an open one, its unwritten items unknown."""
    index = model.index
    stmt = binding.node
    block = next((b for b in _blocks(index.parent(stmt)) if stmt in b), None)
    if block is None:
        return items
    name = use.id
    out = _OpenList(items) if items is None or isinstance(items, _OpenList) else list(items)
    known = items is not None
    writes = False
    for node in index.names(name):
        if node is use or not (stmt.lineno < node.lineno < use.lineno) or \
                index.resolve(name, index.scope_of(node)) != index.resolve(name, index.scope_of(use)):
            continue
        site = index.parent(node)
        writer = index.parent(site)
        if isinstance(site, ast.Subscript) and isinstance(site.ctx, ast.Store) and isinstance(writer, ast.Assign) \
                and writer.targets == [site]:
            at = site.slice.value if isinstance(site.slice, ast.Constant) else None
            if type(at) is not int or at < 0:
                return None
            writes = True
            while len(out) <= at:
                if known and not isinstance(out, _OpenList):
                    return None  # an index past the list's end: an IndexError, not ours to read
                out.append(())
            out[at] = (writer.value,) if writer in block else out[at] + (writer.value,)
        elif isinstance(site, ast.Attribute) and site.attr == "append" and isinstance(writer, ast.Call) and \
                writer.func is site and len(writer.args) == 1 and index.parent(writer) in block and known and \
                not isinstance(out, _OpenList):
            writes = True
            out.append((writer.args[0],))
        elif isinstance(site, ast.Attribute) or isinstance(site, ast.Subscript) and isinstance(site.ctx, ast.Store):
            return None  # another write (`a.insert`, `a[i] = v` for a computed `i`): not followed
    if not known and not writes:
        return None
    return out


def _blocks(node: Optional[ast.AST]) -> List[List[ast.stmt]]:
    return [getattr(node, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(node, f, None), list)]


def _callers(model: FileModel, fn: FunctionNode) -> List[ast.Call]:
    """The calls of `fn` by its name in the module (none for a lambda not bound to a name)."""
    index = model.index
    name = getattr(fn, "name", None)
    if name is None:
        parent = index.parent(fn)
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
            return []
        name = parent.targets[0].id
    calls = []
    for use in index.names(name):
        site = index.parent(use)
        if isinstance(site, ast.Call) and site.func is use and named_function(index, use) is fn:
            calls.append(site)
    return calls


def _param_values(model: FileModel, fn: FunctionNode, name: str) -> Optional[List[ast.expr]]:
    """What every call of `fn` in the module passes for its parameter `name` (None: no call, or
    one the module does not show)."""
    sig = model.signature(fn)
    if name not in sig.positional:
        return None
    position = sig.positional.index(name)
    values: List[ast.expr] = []
    for call in _callers(model, fn):
        given = next((k.value for k in call.keywords if k.arg == name), None)
        spread = _positions(model, call.args, 0) if given is None else None
        if given is not None:
            values.append(given)
        elif spread is not None and position < len(spread) and spread[position]:
            values.extend(spread[position])
        elif spread is not None and not isinstance(spread, Open) and position >= len(spread) and \
                name in sig.defaults:
            values.append(sig.defaults[name])
        else:
            return None
    return values or None


def _frame(frames: Frames, fn: ast.AST) -> Optional[Dict[str, int]]:
    for node, ranks in frames:
        if node is fn:
            return dict(ranks)
    return None


@query
def least_rank(model: FileModel, e: ast.expr, frames: Frames = (), depth: int = 0) -> int:
    """The least rank `e` provably has (0: a scalar, or nothing shown)."""
    if depth > DEPTH:
        return 0
    nxt = depth + 1
    if isinstance(e, ast.Name):
        return _name_rank(model, e, frames, nxt)
    if isinstance(e, ast.UnaryOp):
        return least_rank(model, e.operand, frames, nxt)
    if isinstance(e, ast.BinOp):
        left, right = least_rank(model, e.left, frames, nxt), least_rank(model, e.right, frames, nxt)
        return _matmul(left, right) if isinstance(e.op, ast.MatMult) else max(left, right)
    if isinstance(e, ast.IfExp):
        return min(least_rank(model, e.body, frames, nxt), least_rank(model, e.orelse, frames, nxt))
    if isinstance(e, ast.Attribute) and e.attr in ("T", "mT", "real", "imag"):
        return least_rank(model, e.value, frames, nxt)
    if isinstance(e, ast.Subscript):
        return _subscript_rank(model, e, frames, nxt)
    if isinstance(e, ast.Call):
        return _call_rank(model, e, frames, nxt)
    return 0


def _matmul(left: int, right: int) -> int:
    if left >= 2 and right >= 2:
        return max(left, right)
    return 1 if left >= 2 or right >= 2 else 0


def _subscript_rank(model: FileModel, e: ast.Subscript, frames: Frames, depth: int) -> int:
    keys = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
    rank = least_rank(model, e.value, frames, depth)
    for key in keys:
        if isinstance(key, ast.Constant) and key.value is None:
            rank += 1
        elif isinstance(key, ast.Slice) or isinstance(key, ast.Constant) and key.value is Ellipsis:
            continue
        elif isinstance(key, ast.Constant) and type(key.value) is int or \
                isinstance(key, ast.UnaryOp) and isinstance(key.operand, ast.Constant):
            rank -= 1
        else:
            return 0
    return max(rank, 0)


def _name_rank(model: FileModel, e: ast.Name, frames: Frames, depth: int) -> int:
    index = model.index
    found = index.resolve(e.id, index.scope_of(e))
    if found is None or len(found[1]) != 1:
        return 0
    scope, (binding,) = found
    if binding.kind == "param" and isinstance(scope.node, FUNCTION_TYPES):
        known = _frame(frames, scope.node)
        if known is not None:
            return known.get(e.id, 0)
        values = _param_values(model, scope.node, e.id)
        return min((least_rank(model, v, frames, depth) for v in values), default=0) if values else 0
    if binding.kind != "assign":
        return 0
    if binding.value is not None:
        return least_rank(model, binding.value, frames, depth)
    node = binding.node  # `u, v = pair(a, b)`: the element of what the call returns
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)):
        names = node.targets[0].elts
        at = next((i for i, t in enumerate(names) if isinstance(t, ast.Name) and t.id == e.id), None)
        if at is None or any(isinstance(t, ast.Starred) for t in names):
            return 0
        items = _returned_items(model, node.value, len(names), frames, depth)
        return items[at] if items is not None else 0
    return 0


def _returned_items(model: FileModel, value: ast.expr, n: int, frames: Frames, depth: int) -> Optional[List[int]]:
    """The least ranks of the `n` items of `value`: a literal, or a call of a function returning one."""
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == n:
        return [least_rank(model, x, frames, depth) for x in value.elts]
    if not isinstance(value, ast.Call):
        return None
    callee, inner = _callee_frames(model, value, frames, depth)
    if callee is None:
        return None
    returns = [_passed(model, value, callee, v) for _, v in model.facts.returns_of(callee)]
    found = [_returned_items(model, v, n, frames if v in passed else inner, depth + 1) if v is not None else None
             for v, passed in ((v, set(_args_of(value))) for v in returns)]
    if not found or any(f is None for f in found):
        return None
    return [min(f[i] for f in found) for i in range(n)]  # type: ignore[index]


def _args_of(call: ast.Call) -> List[ast.expr]:
    return list(call.args) + [k.value for k in call.keywords]


def _passed(model: FileModel, call: ast.Call, callee: FunctionNode, v: Optional[ast.expr]) -> Optional[ast.expr]:
    """A returned parameter of `callee` (`return x`) read as what `call` passes for it."""
    if not isinstance(v, ast.Name) or any(isinstance(a, ast.Starred) for a in call.args):
        return v
    sig = model.signature(callee)
    given = next((k.value for k in call.keywords if k.arg == v.id), None)
    if given is not None:
        return given
    if v.id in sig.positional and sig.positional.index(v.id) < len(call.args):
        return call.args[sig.positional.index(v.id)]
    return v


def _callee_frames(model: FileModel, call: ast.Call, frames: Frames, depth: int):
    """The module function (or custom primal) `call` calls, with its parameters' ranks as a frame."""
    d = model.facts.derivative_named(call.func)
    callee = d.primal if d is not None else named_function(model.index, call.func)
    if not isinstance(callee, FUNCTION_TYPES) or _frame(frames, callee) is not None:
        return None, frames
    sig = model.signature(callee)
    spread = _positions(model, call.args, depth)
    ranks: Dict[str, int] = {}
    for i, p in enumerate(sig.positional):
        given = next((k.value for k in call.keywords if k.arg == p), None)
        options = (given,) if given is not None else spread[i] if spread is not None and i < len(spread) else ()
        ranks[p] = min((least_rank(model, v, frames, depth) for v in options), default=0)
    return callee, frames + ((callee, tuple(sorted(ranks.items()))),)


@query
def least_output_rank(model: FileModel, fn: FunctionNode, frames: Frames = (), depth: int = 0,
                      aux: bool = False) -> int:
    """The least rank of every return of `fn` (0: some return may be a scalar, or no return); with
    `aux` (`has_aux=True`), of the first item of every return, each a pair `out, aux`."""
    returns = [v for _, v in model.facts.returns_of(fn)]
    if not returns or any(v is None for v in returns):
        return 0
    if aux:
        if not all(isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == 2 for v in returns):
            return 0
        returns = [v.elts[0] for v in returns]  # type: ignore[union-attr]
    return min(least_rank(model, v, frames, depth + 1) for v in returns)  # type: ignore[arg-type]


def _call_rank(model: FileModel, e: ast.Call, frames: Frames, depth: int) -> int:
    q = model.index.qualname(e.func) or ""
    module, _, tail = q.rpartition(".")
    if q.startswith(_ARRAYS):
        return _array_call_rank(model, e, tail, frames, depth)
    if q.startswith(_RANDOM):
        shape = next((k.value for k in e.keywords if k.arg == "shape"), e.args[1] if len(e.args) > 1 else None)
        return _shape_rank(shape) if tail not in ("split", "PRNGKey", "key", "fold_in") else 0
    if isinstance(e.func, ast.Attribute) and not q:
        return _method_rank(model, e, frames, depth)
    callee, inner = _callee_frames(model, e, frames, depth)
    if callee is None:
        return 0
    return least_output_rank(model, callee, inner, depth)


def _shape_rank(shape: Optional[ast.expr]) -> int:
    if isinstance(shape, (ast.Tuple, ast.List)):
        return len(shape.elts) if not any(isinstance(s, ast.Starred) for s in shape.elts) else 0
    if isinstance(shape, ast.Constant) and type(shape.value) is int:
        return 1
    return 0


def _literal_depth(e: ast.expr) -> int:
    if isinstance(e, (ast.List, ast.Tuple)) and e.elts:
        return 1 + min(_literal_depth(x) for x in e.elts)
    return 0


def _array_call_rank(model: FileModel, e: ast.Call, tail: str, frames: Frames, depth: int) -> int:
    args = e.args
    if tail in _SHAPED:
        return _shape_rank(args[0] if args else next((k.value for k in e.keywords if k.arg == "shape"), None))
    if tail in _RANGES:
        return 1
    if tail in ("eye", "identity", "outer"):
        return 2
    if tail in _LIKE and args:
        return max(_literal_depth(args[0]), least_rank(model, args[0], frames, depth))
    if tail in ("stack", "vstack", "hstack", "concatenate", "column_stack") and args and \
            isinstance(args[0], (ast.List, ast.Tuple)) and args[0].elts:
        inner = min(least_rank(model, x, frames, depth) for x in args[0].elts)
        return inner + 1 if tail == "stack" else max(inner, 1)
    if tail in ELEMENTWISE and not any(isinstance(a, ast.Starred) for a in args):
        return max((least_rank(model, a, frames, depth) for a in args), default=0)
    if tail in _MATMUL and len(args) == 2:
        return _matmul(least_rank(model, args[0], frames, depth), least_rank(model, args[1], frames, depth))
    if tail in REDUCTIONS and args:
        return _reduced(model, args[0], args[1:], e.keywords, frames, depth)
    return 0


def _reduced(model: FileModel, operand: ast.expr, args: List[ast.expr], keywords: List[ast.keyword],
             frames: Frames, depth: int) -> int:
    kw = {k.arg: k.value for k in keywords}
    axis = args[0] if args else kw.get("axis")
    if axis is None or isinstance(axis, ast.Constant) and axis.value is None:
        return 0
    keep = kw.get("keepdims")
    inner = least_rank(model, operand, frames, depth)
    if isinstance(keep, ast.Constant) and keep.value is True:
        return inner
    if keep is not None:
        return 0
    axes = axis.elts if isinstance(axis, ast.Tuple) else [axis]
    return max(inner - len(axes), 0)


def _method_rank(model: FileModel, e: ast.Call, frames: Frames, depth: int) -> int:
    method = e.func.attr  # type: ignore[attr-defined]
    owner = e.func.value  # type: ignore[attr-defined]
    if method in ("astype", "conj", "copy", "block_until_ready"):
        return least_rank(model, owner, frames, depth)
    if method == "reshape":
        shape = e.args[0] if len(e.args) == 1 else ast.Tuple(list(e.args), ast.Load())
        return _shape_rank(shape) if not any(isinstance(s, ast.Constant) and s.value == -1 for s in e.args) \
            or len(e.args) > 1 else 1
    if method in REDUCTIONS:
        return _reduced(model, owner, e.args, e.keywords, frames, depth)
    return 0


NAMED_TUPLES = frozenset({"typing.NamedTuple", "typing_extensions.NamedTuple"})


def _leaves(model: FileModel, e: ast.expr) -> Optional[List[ast.expr]]:
    """The items of a pytree literal the module builds: a tuple, list or dict display, `dict(k=v)`,
    or a call of a NamedTuple class of the module (None: not one)."""
    if isinstance(e, (ast.Tuple, ast.List)):
        return [x for x in e.elts if not isinstance(x, ast.Starred)]
    if isinstance(e, ast.Dict):
        return [v for k, v in zip(e.keys, e.values) if k is not None]
    if not isinstance(e, ast.Call):
        return None
    if (model.index.qualname(e.func) or "") == "builtins.dict" and not e.args:
        return [k.value for k in e.keywords if k.arg is not None]
    if isinstance(e.func, ast.Name):
        bindings = model.index.lookup(e.func.id, model.index.scope_of(e))
        cls = bindings[0].node if len(bindings) == 1 else None
        if isinstance(cls, ast.ClassDef) and any((model.index.qualname(b) or "") in NAMED_TUPLES for b in cls.bases):
            return [a for a in e.args if not isinstance(a, ast.Starred)] + [k.value for k in e.keywords if k.arg]
    return None


@query
def integer_input(model: FileModel, e: ast.expr, depth: int = 0) -> Optional[ast.expr]:
    """The expression showing that `e` is an integer or bool value (None: not shown), through
    names and the parameters every call of their function gives one."""
    if depth > DEPTH:
        return None
    index = model.index
    if isinstance(e, ast.Name):
        found = index.resolve(e.id, index.scope_of(e))
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "param" and \
                isinstance(found[0].node, FUNCTION_TYPES):
            values = _param_values(model, found[0].node, e.id)
            shown = [integer_input(model, v, depth + 1) for v in values or ()]
            return shown[0] if shown and all(s is not None for s in shown) else None
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" and found[1][0].value is not None:
            return integer_input(model, found[1][0].value, depth + 1)
        return None
    if isinstance(e, ast.Constant):
        return e if type(e.value) in (int, bool) else None
    leaves = _leaves(model, e)
    if leaves is not None:  # a pytree: JAX checks each leaf's dtype
        return next((s for s in (integer_input(model, v, depth + 1) for v in leaves) if s is not None), None)
    if isinstance(e, ast.Call):
        q = index.qualname(e.func) or ""
        if q.startswith(_ARRAYS) and q.rsplit(".", 1)[-1] == "arange" and e.args and not e.keywords and \
                len(e.args) <= 3 and all(integer_input(model, a, depth + 1) is not None for a in e.args):
            return e  # `jnp.arange(n)` with `n` an int from every caller: an int32 array
        if q.startswith(_ARRAYS) and q.rsplit(".", 1)[-1] in ("array", "asarray") and e.args and \
                not e.keywords and len(e.args) == 1 and isinstance(e.args[0], (ast.List, ast.Tuple)) and \
                e.args[0].elts and all(isinstance(x, ast.Constant) and type(x.value) in (int, bool) for x in e.args[0].elts):
            return e
    return e if model.facts.integers().evidence(e) is not None and not isinstance(e, ast.Name) else None
