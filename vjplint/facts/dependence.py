"""Which parameters of a primal its output depends on differentiably, and whether a call site
passes a parameter anything but constants. Read by the rules on zero derivatives given for a
used input: VJP602 (a custom_vjp bwd returning `None`/a zero) and VJP609 (a `None` in
`defjvps`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Optional, Set, Tuple

from vjplint.facts.crossmodule import external_calls, is_top_level
from vjplint.model.file_model import CustomDerivative
from vjplint.model.semantic import FunctionNode, constant_value, named_function
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query

if TYPE_CHECKING:
    from vjplint.model.file_model import FileModel

# jnp/lax functions whose result carries no derivative of these arguments (all of them).
NOT_DIFFERENTIABLE = frozenset({
    "argmax", "argmin", "argsort", "round", "rint", "floor", "ceil", "sign", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "isnan", "isinf", "isfinite", "nonzero", "searchsorted", "digitize",
    "bincount", "zeros_like", "ones_like", "full_like", "empty_like", "shape", "ndim", "size", "result_type",
    "stop_gradient", "logical_and", "logical_or", "logical_not", "top_k_indices", "floor_divide", "remainder",
    # Iterations to a fixed point: their result need not depend on the initial guess (implicit
    # differentiation returns zero for it, correctly), so no claim is made through them.
    "fori_loop", "while_loop", "custom_root", "custom_linear_solve",
})
# Differentiable in their first argument only (the others are indices or shapes).
FIRST_ONLY = frozenset({"take", "take_along_axis", "reshape", "broadcast_to", "dynamic_slice", "gather", "roll",
                        "tile", "repeat", "full"})
# `f.defvjp(...)` and kin register rules; `f.fun` is the undecorated primal (no custom rule runs).
REGISTRATION_ATTRIBUTES = frozenset({"defvjp", "defjvp", "defjvps", "def_fwd", "def_bwd", "def_jvp", "fun"})
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.")
METHODS = frozenset({"sum", "mean", "reshape", "transpose", "astype", "squeeze", "ravel", "dot", "max", "min",
                     "clip", "conj", "cumsum", "prod", "std", "var", "flatten", "swapaxes"})
INTEGER_DTYPES = ("int", "bool", "uint", "int8", "int16", "int32", "int64", "uint8", "uint32", "bool_")
# Parameters usually holding integers, keys or masks, whose zero derivative is what JAX wants.
INTEGER_NAMES = frozenset({"mask", "masks", "idx", "index", "indices", "ids", "key", "keys", "rng", "seed",
                           "label", "labels", "positions", "segment_ids", "perm", "permutation", "counts", "lengths",
                           "offsets", "rngs", "prng_key", "indptr", "row", "col", "rows", "cols", "target", "targets",
                           "y_true"})


@query(memo=False)
def integer_named(param: str) -> bool:
    """Named like an integer array, a mask or a key (`idx`, `mask`, `key`, `*_ids`, ...)."""
    return param.lower() in INTEGER_NAMES or param.lower().endswith(("_idx", "_ids", "_mask", "_key", "_index"))


@query
def only_constants_passed(model: "FileModel", d: CustomDerivative, position: int, param: str) -> bool:
    """Every call of `d` in this module (its rules' calls aside) passes, at `position`, a value
    built from constants and module-level names (a function's variable only through its shape,
    `ones_like(x)`): it is never differentiated here. False when there is no such call."""
    from vjplint.facts.infer import argument_at  # infer reads facts: imported when used, as facts/__init__ does

    rules = {r.node for _, r in model.facts.rules_of(d) if r.node is not None}
    sites = [s for s in d.call_sites if s.enclosing not in rules]  # fwd calling the primal
    if not sites:
        return False
    for site in sites:
        arg = argument_at(site.call, position - site.positional_offset, param)
        if arg is None:
            return False
        if carries_a_variable(model, arg):
            return False
    return True


# Transformations whose result takes the function's arguments at the same positions.
POSITION_KEEPING = frozenset({"jax.vmap", "jax.jit", "jax.checkpoint", "jax.remat", "jax.named_call"})


@dataclass(frozen=True)
class ZeroTangentCall:
    """A call of a custom_jvp that passes, in one differentiable slot, a value no gradient flows
    into (a constant, or the parameter's default), while another slot carries a variable: when
    the call is differentiated, the rule runs and that slot's tangent is a symbolic zero."""

    slot: int  # the index in the rule's `primals`/`tangents` tuples
    element: int  # -1: the whole argument; i: the i-th element of a tuple or list passed there
    param: str  # the primal's parameter (`xs[1]` for the second `*xs` extra, `pair[1]` for an element)
    where: str  # "line 12"
    passed: str  # the value's source text; "" when the default is used
    fixed_by: str  # "" for a constant; else the transform that holds it fixed ("`jax.grad` at line 9")


@dataclass(frozen=True)
class ZeroTangents:
    """What the calls of a custom_jvp in the run show of the tangents its rule receives."""

    visible: bool  # every call is read here: some in this module, none hidden, a private or local function not handed on
    proven: Tuple[ZeroTangentCall, ...]  # the first such call for each slot a call proves a symbolic zero


@query
def zero_tangent_calls(model: "FileModel", d: CustomDerivative) -> ZeroTangents:
    """For a custom_jvp, the slots some call of the module passes a constant (or leaves to a
    constant default) while passing a variable in another slot: JAX runs the rule with that
    slot's tangent a symbolic zero (`SymbolicZero` under `symbolic_zeros=True`), whichever of the
    caller's inputs is differentiated. `visible` says whether the calls read are all there are."""
    from vjplint.facts.infer import argument_at  # infer reads facts: imported when used

    sig = d.signature
    rules = {r.node for _, r in model.facts.rules_of(d) if r.node is not None}
    sites = [(s.call, s.positional_offset) for s in d.call_sites if s.enclosing not in rules]
    mapped = set()  # `jax.vmap(f, in_axes=...)(x, y)`, `jax.jit(f)(x, y)`: calls of `f` with the same positions
    wrapped, transforms = model.facts.transformed_calls()
    for node in wrapped:
        if model.facts.derivative_named(node.func.args[0]) is d:  # type: ignore[attr-defined]
            sites.append((node, 0))
            mapped.add(node.func.args[0])  # type: ignore[attr-defined]
    for node in transforms:  # `jax.grad(f, argnums=0)(x, k)`: a call of `f` under the transform itself
        parent = model.index.parent(node)
        if model.facts.derivative_named(node.args[0]) is d and isinstance(parent, ast.Call) and parent.func is node:
            sites.append((parent, 0))
            mapped.add(node.args[0])
    other = model.facts.external
    used_elsewhere = other is not None and is_top_level(model, d.anchor) and bool(other.uses.get(d.name))
    private = d.name.startswith("_") or d.enclosing is not None  # a public module-level name: other code may call it
    visible = bool(sites) and sig is not None and private and not used_elsewhere and \
        not _handed_on(model, d, rules, mapped)
    proven: Dict[Tuple[int, int], ZeroTangentCall] = {}
    for call, offset in sites:
        if sig is None or any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            visible = False
            continue
        count = len(call.args) + offset
        if sig.vararg is None:
            count = len(sig.positional)
        slots = []  # (slot, position, name, argument or None for the default)
        for position in range(count):
            if position in d.nondiff:
                continue
            name = sig.positional[position] if position < len(sig.positional) else \
                f"{sig.vararg}[{position - len(sig.positional)}]"
            arg = argument_at(call, position - offset, name)
            if arg is None and name not in sig.defaults:
                slots = []
                break
            slots.append((len(slots), name, arg))
        moving, fixed_by = _differentiated_params(model, model.index.enclosing_function(call), transforms)

        def moves(arg: Optional[ast.expr]) -> bool:
            if arg is None:
                return False
            if moving is None:  # not under a transform of this module: any variable may carry a tangent
                return carries_a_variable(model, arg)
            return _depends_on(model, arg, moving)  # `jax.grad(lambda a, b: f(a, b), argnums=0)`

        perturbed = [moves(s[2]) for s in slots]
        if not any(perturbed):
            continue  # nothing here is differentiated: the rule does not run
        where = f"line {call.lineno}"
        for (slot, name, arg), moved in zip(slots, perturbed):
            if moved and isinstance(arg, (ast.Tuple, ast.List)) and not any(
                    isinstance(e, ast.Starred) for e in arg.elts):  # `f((v, gate))`: one leaf held fixed
                for i, element in enumerate(arg.elts):
                    if (slot, i) not in proven and not moves(element):
                        proven[(slot, i)] = ZeroTangentCall(slot, i, f"{name}[{i}]", where, model.quote(element, 40),
                                                            fixed_by if carries_a_variable(model, element) else "")
            if (slot, -1) in proven or moved:
                continue
            if arg is None and carries_a_variable(model, sig.defaults[name]):
                continue
            proven[(slot, -1)] = ZeroTangentCall(slot, -1, name, where, model.quote(arg, 40) if arg is not None else "",
                                                 fixed_by if arg is not None and carries_a_variable(model, arg) else "")
    return ZeroTangents(visible, tuple(proven[s] for s in sorted(proven)))


@query
def transformed_calls(model: "FileModel") -> Tuple[Tuple[ast.Call, ...], Tuple[ast.Call, ...]]:
    """The module's calls of a transformed function that keep its positions (`jax.vmap(f, ...)(x)`,
    `jax.jit(f)(x)`) and its differentiating transformations (`jax.grad(g, argnums=0)`), once per file."""
    wrapped, transforms = [], []
    for node in model.index.of_type(ast.Call):
        if isinstance(node.func, ast.Call) and node.func.args and model.index.qualname(node.func.func) in POSITION_KEEPING:
            wrapped.append(node)
        if node.args and model.index.qualname(node.func) in DIFFERENTIATING:
            transforms.append(node)
    return tuple(wrapped), tuple(transforms)


@query
def name_loads(model: "FileModel") -> Dict[str, int]:
    """How many times the module reads each name, once per file."""
    counts: Dict[str, int] = {}
    for node in model.index.of_type(ast.Name):
        if isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


# Transformations that differentiate their first argument: with `argnums` (default 0), or every input.
DIFFERENTIATING = {"jax.grad": 0, "jax.value_and_grad": 0, "jax.jacfwd": 0, "jax.jacrev": 0, "jax.hessian": 0,
                   "jax.jvp": None, "jax.linearize": None, "jax.vjp": None}


def _differentiated_params(model: "FileModel", fn: Optional[FunctionNode], transforms
                           ) -> Tuple[Optional[Set[str]], str]:
    """The parameters of `fn` the module's transforms differentiate, when every use of `fn` is as
    the function a transform differentiates (a lambda given to `jax.grad`, a def only handed to
    `jax.jvp`), with the first such transform ("`jax.grad` at line 9"); None when something else
    may call it (then any of its variables may move)."""
    if fn is None:
        return None, ""
    sig = model.signature(fn)
    uses = [t for t in transforms if named_function(model.index, t.args[0]) is fn]
    if not uses:
        return None, ""
    if not isinstance(fn, ast.Lambda):
        if model.facts.name_loads().get(fn.name, 0) != len(uses):
            return None, ""  # also called or handed on elsewhere
    where = f"`{model.quote(uses[0].func, 30)}` at line {uses[0].lineno}"
    moving: Set[str] = set()
    for t in uses:
        default = DIFFERENTIATING[model.index.qualname(t.func) or ""]
        if default is None:
            moving.update(sig.positional)
            continue
        argnums = next((k.value for k in t.keywords if k.arg == "argnums"), None)
        value = constant_value(model.index, argnums) if argnums is not None else default
        numbers = value if isinstance(value, tuple) else (value,)
        if not all(type(i) is int and 0 <= i < len(sig.positional) for i in numbers):
            return None, ""
        moving.update(sig.positional[i] for i in numbers)
    return moving, where


def _depends_on(model: "FileModel", expr: ast.expr, moving: Set[str]) -> bool:
    """Whether `expr` may depend on one of the parameters `moving` of the function it is in: a
    name of the function other than a parameter held fixed (a local, followed no further) counts."""
    fn = model.index.enclosing_function(expr)
    sig = model.signature(fn) if fn is not None else None
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "size"):
            continue
        if isinstance(node, ast.Name):
            found = model.index.resolve(node.id, model.index.scope_of(node))
            if found is None:
                return True
            if found[0].node is fn and (sig is None or node.id not in sig.positional or node.id in moving):
                return True
            if fn is not None and found[0].node is not fn and model.index.inside(found[0].node, fn):
                return True  # a comprehension's variable inside the function: followed no further
        stack.extend(ast.iter_child_nodes(node))
    return False


@dataclass(frozen=True)
class CallEvidence:
    """Why some call of a custom derivative in the run may differentiate one of its arguments."""

    where: str  # "line 12" or "driver.py:12"
    passed: str  # the argument's source text ("" when the call hides it: `f(*args)`)
    traced: str  # why it is a tracer, where that is known


@query
def differentiated_at_call(model: "FileModel", d: CustomDerivative, position: int,
                           param: str) -> Tuple[bool, Optional[CallEvidence]]:
    """Whether a call of `d` in the run may pass, at `position`, a value gradients flow into.

    (True, evidence) when some call (its rules' calls aside: a fwd calling the primal passes its
    own parameters on) passes a value computed in a function from arrays or unknown values, a
    traced value (a parameter of a custom derivative's rule or of a function under
    grad/jit/vmap/scan, or a closure over one), or one that cannot be read; (True, None) when
    nothing in the run shows what is passed: no such call, or `d` used other than by calls here
    (handed to `jax.grad`, registered as another derivative's rule, used by another module).
    (False, None) when every call passes a literal, a module-level constant, a static value, or a
    bare parameter (or an alias of one) of a function nothing shows traced or called with more:
    nothing shows a gradient flowing into the argument (jax-ml/jax#17496 needs one)."""
    from vjplint.facts.infer import argument_at  # infer reads facts: imported when used

    rules = {r.node for _, r in model.facts.rules_of(d) if r.node is not None}
    sites = [s for s in d.call_sites if s.enclosing not in rules]
    external = external_calls(model, d.name, d.anchor)
    other = model.facts.external
    used_elsewhere = other is not None and is_top_level(model, d.anchor) and \
        bool(set(other.uses.get(d.name, [])) - {c.where for c in external})  # `jax.grad(mod.f)`: not a call
    if not (sites or external) or used_elsewhere or _handed_on(model, d, rules):
        return True, None
    values = model.facts.values()
    for site in sites:
        where = f"line {site.call.lineno}"
        arg = argument_at(site.call, position - site.positional_offset, param)
        if arg is None:
            return True, CallEvidence(where, "", "")
        if not carries_a_variable(model, arg):
            continue
        kind = values.of(arg)
        if kind.traced:
            return True, CallEvidence(where, model.quote(arg, 40), kind.traced)
        if kind.is_static:
            continue
        if isinstance(arg, ast.Name) and kind.origin is not None and not _handed_on_function(model, kind.origin[0]):
            continue  # a bare parameter of a function nothing shows traced
        return True, CallEvidence(where, model.quote(arg, 40), "")
    for call in external:
        found = call.arg(position, param)
        if found is None:
            return True, CallEvidence(call.where, "", "")
        if found.traced:
            return True, CallEvidence(call.where, found.quoted, found.traced)
        if found.tag == "static" or (found.tag == "unknown" and not found.why and found.quoted.isidentifier()):
            continue  # a literal or a bare name nothing shows computed or traced
        return True, CallEvidence(call.where, found.quoted, "")
    return False, None


def _handed_on(model: "FileModel", d: CustomDerivative, rules: Set[ast.AST], also: Set[ast.AST] = frozenset()) -> bool:
    """`d`'s name is read other than to call it or register its rules, outside its own rules and
    primal: handed to `jax.grad`/`vmap`, registered as another derivative's rule, stored. Its
    arguments then come from where the linter does not look. (`f.fun`, the undecorated primal,
    runs no custom rule.)"""
    calls = {s.call.func for s in d.call_sites} | also
    own = rules | ({d.primal} if d.primal is not None else set()) | {d.creation}  # `f = custom_vjp(f)`
    # `f = make_f()`: the factory's `return f` hands it to those names, whose uses are read as its own
    made = {t.id for a in d.bound_at for t in getattr(a, "targets", [getattr(a, "target", None)])
            if isinstance(t, ast.Name)}
    root = model.module if made else d.enclosing or model.module
    # the whole module: only its names of those spellings (the index's table), not a walk per derivative
    nodes = [n for name in {d.name, *made} for n in model.index.names(name)] if root is model.module else walk(root)
    for node in nodes:
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or node in calls:
            continue
        if node.id != d.name and not (node.id in made and model.facts.derivative_named(node) is d):
            continue
        parent = model.index.parent(node)
        if made and isinstance(parent, ast.Return) and model.index.enclosing_function(parent) is d.enclosing:
            continue
        if made and node.id == d.name and model.facts.derivative_named(node) is not d:
            continue  # another binding of the same name
        if isinstance(parent, ast.Attribute) and parent.attr in REGISTRATION_ATTRIBUTES:
            continue
        if isinstance(parent, ast.Call) and any(parent is r.node for r in d.registrations):
            continue  # `_register(f, f_fwd, f_bwd)`: registered through a helper (vjplint.facts.collect)
        if any(a in own for a in model.index.ancestors(node)):
            continue  # a rule using its own primal (`jax.vjp(f.fun, ...)` in bwd)
        return True
    return False


def _handed_on_function(model: "FileModel", fn: ast.AST) -> bool:
    """A function some code the linter does not know may trace: a lambda passed to a call
    (`api.grad(lambda x: f(x, x))`), a method, a def with a decorator or read other than to call
    it (`opt.minimize(loss)`). Its parameters are then not shown untraced."""
    index = model.index
    if isinstance(fn, ast.Lambda):
        return isinstance(index.parent(fn), (ast.Call, ast.keyword))
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or isinstance(index.parent(fn), ast.ClassDef):
        return True  # a method: called through attributes (`self.loss`, a framework's `__call__`)
    if any(index.qualname(d) != "builtins.staticmethod" for d in fn.decorator_list):
        return True
    for node in index.names(fn.name):  # (the module's names of that spelling, not a walk of every node)
        if isinstance(node.ctx, ast.Load):
            parent = index.parent(node)
            if isinstance(parent, ast.Call) and parent.func is node:
                continue
            found = index.resolve(node.id, index.scope_of(node))
            if found is not None and any(b.node is fn for b in found[1]):
                return True
    return False


@query
def carries_a_variable(model: "FileModel", expr: ast.AST) -> bool:
    """A function's variable reaches `expr` other than through shape-only calls (`ones_like`)."""
    index = model.index
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            q = index.qualname(node.func) or ""
            if q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in NOT_DIFFERENTIABLE:
                continue
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "size"):
            continue
        if isinstance(node, ast.Name):
            found = index.resolve(node.id, index.scope_of(node))
            if found is None or found[0].is_function:
                return True
        stack.extend(ast.iter_child_nodes(node))
    return False


class PrimalFlow:
    """Which names of a function (a primal) carry a differentiable dependence on a parameter."""

    def __init__(self, model: "FileModel", fn: FunctionNode) -> None:
        self.model, self.fn = model, fn
        self.index = model.index
        self.assigns = sorted((n for n in model.facts.own_nodes(fn)
                               if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))),
                              key=lambda n: (n.lineno, n.col_offset))

    def reaches_output(self, param: str) -> Optional[ast.expr]:
        """The first return value that depends on `param` differentiably, or None."""
        tainted: Set[str] = {param}
        for _ in range(3):  # a fixpoint over loops and reassignments
            before = len(tainted)
            for node in self.assigns:
                value = node.value
                if value is None or not self.carries(value, tainted):
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    tainted.update(n.id for n in walk(target) if isinstance(n, ast.Name))
            if len(tainted) == before:
                break
        for ret in self.model.facts.returns_of(self.fn):
            if ret.value is not None and self.carries(ret.value, tainted):
                return ret.value
        return None

    def carries(self, expr: ast.expr, names: Set[str], depth: int = 0) -> bool:
        if depth > 20:
            return False
        again = lambda e: self.carries(e, names, depth + 1)  # noqa: E731
        if isinstance(expr, ast.Name):
            return expr.id in names
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.Pow)):
                return again(expr.left) or again(expr.right)
            return False
        if isinstance(expr, ast.UnaryOp):
            return isinstance(expr.op, (ast.USub, ast.UAdd)) and again(expr.operand)
        if isinstance(expr, ast.Subscript):
            return again(expr.value)
        if isinstance(expr, ast.Attribute):
            return expr.attr in ("T", "mT", "real", "imag") and again(expr.value)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return any(again(e) for e in expr.elts)
        if isinstance(expr, ast.IfExp):
            return again(expr.body) or again(expr.orelse)
        if isinstance(expr, ast.Call):
            return self._call(expr, again)
        return False

    def _call(self, call: ast.Call, again) -> bool:
        args = [a for a in call.args if not isinstance(a, ast.Starred)]
        func = call.func
        q = self.index.qualname(func) or ""
        if q.startswith(ARRAY_NAMESPACES):
            tail = q.rsplit(".", 1)[-1]
            if tail in NOT_DIFFERENTIABLE:
                return False
            if tail == "where":
                return any(again(a) for a in args[1:3])
            if tail in FIRST_ONLY:
                return bool(args) and again(args[0])
            return any(again(a) for a in args)
        if isinstance(func, ast.Attribute) and not q and func.attr in METHODS:
            if func.attr == "astype" and args and integer_dtype(args[0]):
                return False
            return again(func.value) or (func.attr == "dot" and any(again(a) for a in args))
        return False  # a function not followed: no claim


def integer_dtype(expr: ast.expr) -> bool:
    text = ast.unparse(expr).rsplit(".", 1)[-1].strip("'\"")
    return text in INTEGER_DTYPES


@query
def depends_on_parameters(model: "FileModel", expr: ast.expr, fn: FunctionNode, params: Set[str],
                          depth: int = 0) -> bool:
    """Whether `expr`, evaluated in `fn`, is computed from one of `fn`'s parameters `params` (also
    through `fn`'s assignments), other than through `stop_gradient` or shape-only calls."""
    if depth > 5:
        return False
    scope = model.index.scopes.get(fn)
    if scope is None:
        return False
    stack: list = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            q = model.index.qualname(node.func) or ""
            if q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in NOT_DIFFERENTIABLE:
                continue
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "size"):
            continue
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            for binding in scope.bindings.get(node.id, []):
                if binding.kind == "param" and node.id in params:
                    return True
                if binding.kind == "assign" and binding.value is not None and \
                        depends_on_parameters(model, binding.value, fn, params, depth + 1):
                    return True
        stack.extend(ast.iter_child_nodes(node))
    return False


@query
def zero_cotangent(model: "FileModel", expr: ast.expr) -> bool:
    """`None`, a literal zero, `zeros_like(...)`/`zeros(...)`, `0 * g`, or a tuple of those: a
    cotangent JAX takes as zero without a check."""
    if isinstance(expr, (ast.Tuple, ast.List)):  # `(None,)` for a tuple argument
        return bool(expr.elts) and all(zero_cotangent(model, e) for e in expr.elts)
    if isinstance(expr, ast.Constant):
        return expr.value is None or (type(expr.value) in (int, float) and expr.value == 0)
    if isinstance(expr, ast.Call):
        q = model.index.qualname(expr.func) or ""
        return q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in ("zeros_like", "zeros")
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return any(isinstance(s, ast.Constant) and type(s.value) in (int, float) and s.value == 0
                   for s in (expr.left, expr.right))
    return False


@query
def evidently_not_differentiated(model: "FileModel", primal: FunctionNode, param: str) -> bool:
    """The parameter is evidently never differentiated: named like an integer array, a mask or a
    key, or annotated, defaulting to or used as a Python value or a callable."""
    from vjplint.facts.param_evidence import annotation_evidence, default_evidence, name_evidence, usage_evidence

    if integer_named(param):
        return True
    sig = model.signature(primal)
    evidence = [*annotation_evidence(model, sig.annotations.get(param), param), *name_evidence(param),
                *usage_evidence(model, primal, param)]
    if param in sig.defaults:
        evidence.extend(default_evidence(model, sig.defaults[param]))
    return any(e.kind in ("static", "callable") for e in evidence)


def none_draws_vjp602(model: "FileModel", d: CustomDerivative, param: str) -> Optional[ast.expr]:
    """Where the primal's output depends on `param` (the return value), when a `None` cotangent
    for it is what VJP602 reports: the dependence is differentiable, nothing shows the parameter
    never differentiated, and a call of the run may differentiate it. None otherwise. The
    residual-plus-None fix asks this of each argument it moves out of nondiff_argnums: such a
    `None` keeps the old declaration (never differentiated) but the rewrite turns an error under
    `grad` with respect to it into a zero gradient, so that fix is unsafe and marks the `None`."""
    primal = d.primal
    sig = d.signature
    if primal is None or sig is None or param not in sig.positional or \
            evidently_not_differentiated(model, primal, param):
        return None
    through = PrimalFlow(model, primal).reaches_output(param)
    if through is None:
        return None
    differentiated, _ = differentiated_at_call(model, d, sig.positional.index(param), param)
    return through if differentiated else None


@query(memo=False)
def primal_flow(model: "FileModel", fn: FunctionNode) -> PrimalFlow:
    """Which names of the primal `fn` carry a differentiable dependence on a parameter: a fresh analysis."""
    return PrimalFlow(model, fn)
