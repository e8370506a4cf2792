"""Evidence in a custom_vjp's rules that they break the calling contract where the structures
alone (`vjplint/facts/contract.py`) do not show it.

- `returns_primal_output`: fwd returns what the primal returns (a call of the custom function,
  the parameter the primal returns, or the same expression over the same parameters) instead of
  `(primal_out, residuals)`. JAX then reads that value as the pair: a TypeError when it is not
  one, and when it is one (a primal returning a pair) its first element is taken as the output,
  whose structure differs from the primal's, and the second as residuals (measured on JAX 0.10.2:
  silently wrong gradients, no error).
- `bare_cotangent`: a bwd for one differentiable input returns its cotangent bare, arithmetic on
  it, or an unknown callback applied to it, where JAX needs a 1-tuple.
- `dropped_cotangent`: a bwd that returns None or a zero for an input while its own code shows
  a cotangent was meant: a local named for that input (`dq` for `q`) is computed and never used,
  or the bwd never reads its output cotangent at all, or residuals fwd saved are unpacked and
  never read.

Each returns a short evidence text (quoted in the message) or None. Names raise confidence only
where the code also shows the value (a computed local); they never decide on their own.
"""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

from vjplint.facts.contract import slot_of
from vjplint.facts.values import ARITHMETIC, TREE_MAPS
from vjplint.facts.dependence import PrimalFlow, depends_on_parameters, evidently_not_differentiated
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query

if TYPE_CHECKING:
    from vjplint.model.file_model import CustomDerivative, FileModel

MAX_DEPTH = 4
# callees whose names say they already return the tuple of cotangents (a pullback of jax.vjp, another bwd)
_TUPLE_CALLEE_WORDS = ("vjp", "pullback", "bwd", "backward", "transpose", "grad_fn", "adjoint")


def _params(fn: FunctionNode) -> List[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def _single_binding(model: "FileModel", fn: FunctionNode, name: str) -> Optional[Tuple[ast.expr, Optional[int]]]:
    """(value, index) of the one assignment of `name` in `fn`: `name = value` gives index None,
    `a, name = value` gives its position in the target tuple."""
    scope = model.index.scopes.get(fn)
    bindings = scope.bindings.get(name, []) if scope is not None else []
    if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].node, ast.Assign):
        return None
    stmt = bindings[0].node
    if len(stmt.targets) != 1:
        return None
    target = stmt.targets[0]
    if isinstance(target, ast.Name):
        return stmt.value, None
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts]  # type: ignore[union-attr]
        return (stmt.value, names.index(name)) if names.count(name) == 1 else None
    return None


def canonical(model: "FileModel", fn: FunctionNode, expr: ast.expr, bound: int = 0) -> Optional[str]:
    """`expr` with `fn`'s parameters replaced by their positions and its locals bound once by
    their values (`out, _ = g(q)` then `out` is `g(#0)[0]`), as text: two functions whose
    canonical returns agree compute the same value from the same arguments. `bound`: leading
    parameters a `functools.partial` binds, so JAX's first argument is `fn`'s parameter `bound`
    (the bound ones stay names of their own). None past MAX_DEPTH, for a local bound more than
    once, or with a lambda or comprehension (scopes of their own)."""
    node = _canonical_node(model, fn, expr, 0, bound)
    return None if node is None else ast.dump(node, annotate_fields=False)


def _canonical_head(model: "FileModel", fn: FunctionNode, expr: ast.expr, bound: int = 0,
                    depth: int = 0) -> Optional[Tuple[object, ...]]:
    """The outermost node of `canonical(model, fn, expr, bound)` as (its class, how many
    elements, arguments or keywords it holds), read without copying: a local bound once by
    itself stands for its value, as there. None when unknown (that canonical may then be None
    or anything); two known heads that differ mean two canonical forms that differ."""
    while isinstance(expr, ast.Name):
        if not isinstance(fn, ast.Lambda) and expr.id in _star_params(fn) or expr.id in _params(fn):
            return (ast.Name,)
        scope = model.index.scopes.get(fn)
        if scope is None or expr.id not in scope.bindings:
            return (ast.Name,)
        binding = _single_binding(model, fn, expr.id)
        depth += 1
        if binding is None or depth > MAX_DEPTH:
            return None
        if binding[1] is not None:
            return (ast.Subscript,)
        expr = binding[0]
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return (type(expr), len(expr.elts))
    if isinstance(expr, ast.Call):
        return (ast.Call, len(expr.args), len(expr.keywords))
    return (type(expr),)


def _canonical_node(model: "FileModel", fn: FunctionNode, expr: ast.expr, depth: int,
                    bound: int = 0) -> Optional[ast.expr]:
    if depth > MAX_DEPTH:
        return None
    if any(isinstance(n, (ast.Lambda, ast.comprehension)) for n in walk(expr)):
        return None
    params = _params(fn)
    scope = model.index.scopes.get(fn)
    failed = []

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if not isinstance(fn, ast.Lambda) and node.id in _star_params(fn):
                return ast.Name(id=_star_params(fn)[node.id], ctx=ast.Load())  # `*args`, `**kwargs`: by kind
            if node.id in params:
                i = params.index(node.id) - bound
                return ast.Name(id=f"#{i}" if i >= 0 else f"#bound{i}", ctx=ast.Load())
            if scope is None or node.id not in scope.bindings:
                return ast.Name(id=node.id, ctx=ast.Load())  # a global or closure: the same in both functions
            binding = _single_binding(model, fn, node.id)
            inner = _canonical_node(model, fn, binding[0], depth + 1, bound) if binding is not None else None
            if binding is None or inner is None:
                failed.append(node.id)
                return node
            return inner if binding[1] is None else ast.Subscript(value=inner, slice=ast.Constant(binding[1]),
                                                                  ctx=ast.Load())

        def generic_visit(self, node: ast.AST) -> ast.AST:
            if hasattr(node, "ctx"):
                node.ctx = ast.Load()  # type: ignore[attr-defined]
            return super().generic_visit(node)

    out = Sub().visit(copy.deepcopy(expr))
    return None if failed else out


@query
def returns_primal_output(model: "FileModel", d: "CustomDerivative", fwd: FunctionNode,
                          value: ast.expr, bound: int = 0) -> Optional[str]:
    """Why fwd's returned `value` is the primal's own output, or None. `fwd` is the function whose
    body returns `value` (the delegate a registered fwd only hands its parameters to, which
    receives the same arguments); `bound`: leading parameters of `fwd` a `functools.partial` binds."""
    target = _follow_call(model, fwd, value)
    if target is not None and model.facts.derivative_named(target.func) is d:
        shown = model.quote(target, 40)
        return f"`{shown}` is a call of `{d.name}` itself" if target is value else \
            f"`{model.quote(value, 30)}` is `{shown}`, a call of `{d.name}` itself"
    primal = d.primal
    if primal is None or primal is fwd or (primal.args.vararg is None) != (fwd.args.vararg is None) or \
            (primal.args.kwarg is None) != (fwd.args.kwarg is None):
        return None
    if len(_params(primal)) != len(_params(fwd)) - bound:
        return None
    returns = model.facts.returns_of(primal)
    if len(returns) != 1 or returns[0].value is None:
        return None
    # The outermost node of each canonical form first (a tuple's length, a call's arguments): most
    # fwd returns differ from the primal's there, and canonicalising copies both expressions.
    head = _canonical_head(model, fwd, value, bound)
    if head is not None and head != _canonical_head(model, primal, returns[0].value, 0) is not None:
        return None
    mine, theirs = canonical(model, fwd, value, bound), canonical(model, primal, returns[0].value)
    if mine is None or mine != theirs:
        return None
    return f"`{d.name}` returns the same value, `{model.quote(returns[0].value, 40)}`"


def _star_params(fn: FunctionNode) -> dict:
    """`fn`'s `*args` and `**kwargs` names, by kind: two functions forwarding them alike agree."""
    out = {}
    if fn.args.vararg is not None:
        out[fn.args.vararg.arg] = "#*"
    if fn.args.kwarg is not None:
        out[fn.args.kwarg.arg] = "#**"
    return out


def _follow_call(model: "FileModel", fn: FunctionNode, value: ast.expr) -> Optional[ast.Call]:
    if isinstance(value, ast.Call):
        return value
    if isinstance(value, ast.Name):
        bound = _single_binding(model, fn, value.id)
        if bound is not None and bound[1] is None and isinstance(bound[0], ast.Call):
            return bound[0]
    return None


@query
def bare_cotangent(model: "FileModel", bwd: FunctionNode, value: ast.expr, cotangent: str) -> Optional[str]:
    """Why a bwd for one differentiable input returning `value` bare returns a cotangent, not the
    1-tuple JAX needs: the cotangent parameter itself, arithmetic on it (a leaf: arithmetic on a
    tuple repeats or raises), or an unknown callable a caller handed in applied to it."""
    if isinstance(value, ast.Name) and value.id == cotangent:
        return f"the cotangent `{cotangent}` itself"
    if isinstance(value, ast.BinOp) and not isinstance(value.op, (ast.BitOr, ast.BitAnd, ast.BitXor)) and \
            any(isinstance(s, ast.Name) and s.id == cotangent for s in (value.left, value.right)):
        return f"arithmetic on the cotangent `{cotangent}`"
    if isinstance(value, ast.Call) and (model.index.qualname(value.func) or "") in TREE_MAPS and \
            len(value.args) >= 2 and not value.keywords and isinstance(value.args[1], ast.Name) and \
            value.args[1].id == cotangent and isinstance(value.args[0], ast.Lambda) and value.args[0].args.args and \
            model.facts.not_a_sequence(value.args[0].body, bwd, frozenset({value.args[0].args.args[0].arg})) in (
                "an array", ARITHMETIC):
        return f"the cotangent `{cotangent}` mapped leaf by leaf, which keeps its structure"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1 and \
            not value.keywords and isinstance(value.args[0], ast.Name) and value.args[0].id == cotangent:
        name = value.func.id
        if any(w in name.lower() for w in _TUPLE_CALLEE_WORDS):
            return None
        if _callback_parameter(model, bwd, name):
            return f"`{name}`, a function the caller passes in, applied to the cotangent `{cotangent}`"
    return None


def _callback_parameter(model: "FileModel", fn: FunctionNode, name: str) -> bool:
    """`name` is a parameter of a function enclosing `fn` (and not bound in `fn` itself)."""
    scope = model.index.scopes.get(fn)
    if scope is None or name in scope.bindings:
        return False
    outer = scope.parent
    while outer is not None:
        if name in outer.bindings:
            return outer.is_function and all(b.kind == "param" for b in outer.bindings[name])
        outer = outer.parent
    return False


def _loads(fn: FunctionNode) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out[node.id] = out.get(node.id, 0) + 1
    return out


def _assigned_names(fn: FunctionNode) -> List[Tuple[str, ast.stmt]]:
    out: List[Tuple[str, ast.stmt]] = []
    body = fn.body if isinstance(fn.body, list) else []
    for stmt in body:
        for node in walk(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for n in walk(t):
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                            out.append((n.id, node))
    return out


@query
def dropped_cotangent(model: "FileModel", bwd: FunctionNode, param: str, diff: Tuple[str, ...],
                      cotangent: Optional[str], residuals: Optional[str], all_zero: bool,
                      strong: bool = False, used: bool = False) -> Optional[str]:
    """Why a bwd returning None (or a zero) for `param` meant to return its cotangent, or None.
    `strong`: only a local named for `param`, computed and never used. `used`: the primal's output
    shows it depends on `param`, which unread residuals need (alone they may be `param` itself,
    saved and not needed)."""
    loads = model.index.of_node(_loads, bwd)
    for name, stmt in model.index.of_node(_assigned_names, bwd):
        if loads.get(name) or name.startswith("_") or slot_of(name, diff) != param or name == param:
            continue
        if isinstance(stmt.value, ast.Constant) or _is_residual_unpack(stmt, residuals):
            continue
        return f"`{name}` is computed (`{model.quote(stmt, 50)}`) and never used"
    if strong:
        return None
    if cotangent is not None and all_zero and not cotangent.startswith("_") and \
            cotangent not in model.index.of_node(_deleted, bwd):
        read = " (it is only read" + (f" by `{model.quote(_reader(bwd, cotangent), 40)}`)" if loads.get(cotangent) else "")
        return f"the bwd's cotangent `{cotangent}` reaches none of its returns" + (read if loads.get(cotangent) else "")
    if residuals is not None and used:
        unused = [name for name, stmt in model.index.of_node(_assigned_names, bwd)
                  if _is_residual_unpack(stmt, residuals) and not name.startswith("_") and not loads.get(name)]
        if unused:
            shown = ", ".join(f"`{n}`" for n in unused)
            return f"the residual{'s' if len(unused) > 1 else ''} {shown} that fwd saves {'are' if len(unused) > 1 else 'is'} " \
                   f"unpacked and never read"
    return None


@query
def dead_cotangent_value(model: "FileModel", bwd: FunctionNode, cotangent: str) -> Optional[Tuple[str, ast.Assign]]:
    """A local of bwd computed from its cotangent (`dq = ds @ k * scale`, `ds` from `g`) that no
    statement reads: a cotangent bwd computes and then drops, whatever the names say. Only a
    single-name assignment (`a, b = f(g)` with `b` unused is ordinary unpacking), not `_`-named,
    not where bwd `del`s the cotangent."""
    if cotangent.startswith("_") or cotangent in model.index.of_node(_deleted, bwd):
        return None
    loads = model.index.of_node(_loads, bwd)
    for name, stmt in model.index.of_node(_assigned_names, bwd):
        if loads.get(name) or name.startswith("_") or len(stmt.targets) != 1 or \
                not isinstance(stmt.targets[0], ast.Name) or isinstance(stmt.value, ast.Constant):
            continue
        if depends_on_parameters(model, stmt.value, bwd, {cotangent}):
            return name, stmt  # type: ignore[return-value]
    return None


def _is_residual_unpack(stmt: ast.stmt, residuals: Optional[str]) -> bool:
    return residuals is not None and isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and \
        stmt.value.id == residuals and isinstance(stmt.targets[0], (ast.Tuple, ast.List))


def _deleted(fn: FunctionNode) -> FrozenSet[str]:
    """The names `fn` deletes (`del g`: the author says the cotangent is ignored on purpose); kept
    per function (`model.index.of_node`), as `_loads` and `_assigned_names`: the residual fix's
    prediction and VJP602 ask of the same bwd several times."""
    return frozenset(t.id for n in walk(fn) if isinstance(n, ast.Delete) for t in n.targets if isinstance(t, ast.Name))


def _reader(fn: FunctionNode, name: str) -> ast.AST:
    """The statement of `fn` that reads `name` first."""
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for stmt in body:
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(stmt)):
            return stmt
    return fn


@query(memo=False)
def passed_to_bwd(bwd: FunctionNode, nondiff: Optional[Tuple[int, ...]], bound: int = 0) -> Optional[List[str]]:
    """The names of the parameters JAX passes bwd (after the `bound` ones its registration binds:
    `self`), when they are the nondiff arguments, the residuals and the cotangent, in that order;
    None when bwd takes *args or another number, or the nondiff positions are unknown. VJP602's
    condition, asked by the rule and by the residual fix's prediction of it alike."""
    params = [a.arg for a in (*bwd.args.posonlyargs, *bwd.args.args)][bound:]
    if nondiff is None or bwd.args.vararg is not None or len(params) != len(nondiff) + 2:
        return None
    return params


@query
def returns_a_value(model: "FileModel", primal: Optional[FunctionNode]) -> bool:
    """Whether the primal returns a value other than `None`: a stub (`...`, `return None`) has no
    gradient to lose (VJP602's condition, for the rule and the residual fix's prediction alike)."""
    return primal is not None and any(
        r.value is not None and not (isinstance(r.value, ast.Constant) and r.value.value is None)
        for r in model.facts.returns_of(primal))


def rewrite_none_draws_vjp602(model: "FileModel", d: CustomDerivative, fwd: FunctionNode, bwd: FunctionNode,
                              position: int, param: str) -> Optional[str]:
    """Why VJP602's reading of the bwd itself (vjplint.facts.rule_evidence) would flag the `None`
    the residual-plus-None rewrite returns for the nondiff argument at `position` (`param`), or
    None: every entry stays `None` while the bwd never reads its cotangent (the custom_vjp defined
    no derivative at all), or the argument is saved as a residual that the bwd never reads while
    the primal's output depends on it (and fwd saves residuals besides, which the rewrite packs
    with it for bwd to unpack). The rewrite then turns an error under `grad` into a zero
    gradient, as for `none_draws_vjp602`: the fix is unsafe and the `None` marked."""
    primal = d.primal
    order = sorted(d.nondiff)
    params = passed_to_bwd(bwd, tuple(order))
    if primal is None or params is None or position not in order or evidently_not_differentiated(model, primal, param):
        return None
    if not returns_a_value(model, primal):
        return None  # a stub primal: no gradient to lose
    reads = model.index.of_node(_loads, bwd)
    cotangent = params[-1]
    sig = d.signature
    if sig is not None:  # a local named for the argument, computed and never used (`dv` for `v`)
        diff = tuple(p for i, p in enumerate(sig.positional) if i not in d.nondiff or i == position)
        named = dropped_cotangent(model, bwd, param, diff, cotangent, params[-2], False, strong=True)
        if named is not None:
            return named
    returns = [r.value for r in model.facts.returns_of(bwd)]
    all_none = bool(returns) and all(isinstance(v, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Constant) and e.value is None for e in v.elts) for v in returns)
    if all_none and not cotangent.startswith("_") and cotangent not in model.index.of_node(_deleted, bwd):
        return f"the bwd's cotangent `{cotangent}` reaches none of its returns"
    dead = dead_cotangent_value(model, bwd, cotangent)
    if dead is not None:  # a value computed from the cotangent that reaches no return
        return f"`{dead[0]}` is computed from the cotangent and never used"
    own, old = params[order.index(position)], params[-2]
    # a residual of None is replaced by the moved argument itself (`def bwd(offset, g)`): nothing is
    # unpacked, so nothing reads as an unpacked residual; other residuals become a tuple bwd unpacks
    saved = [r.value for r in model.facts.returns_of(fwd)]
    if all(isinstance(v, ast.Tuple) and len(v.elts) == 2 and isinstance(v.elts[1], ast.Constant)
           and v.elts[1].value is None for v in saved):
        return None
    if (own.startswith("_") or reads.get(own)) and (old.startswith("_") or reads.get(old)):
        return None
    if PrimalFlow(model, primal).reaches_output(param) is None:
        return None
    if not reads.get(own) and not own.startswith("_"):
        return f"the bwd never reads `{own}`, which the rewrite saves as a residual"
    # bwd's own residual parameter, never read, becomes a name the rewrite unpacks with the argument
    return f"the bwd never reads its residuals `{old}`, which the rewrite unpacks with `{param}`"
