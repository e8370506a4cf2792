"""What the residual-plus-None planner reads of the code: a rule's own returns, the names a
function spells (kept per file), uses of a rule's name besides its registration, the positions a
`jax.jit` marks static, fresh names, and rules written for other nondiff positions. Answers, never
refusals: `residual_plan` decides and raises.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set, Tuple, Union

from vjplint.model.jaxapi import PARTIAL
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction, Signature
from vjplint.model.semantic import FunctionNode, constant_value, own_nodes, walk


def truthy_or_unknown(expr: Optional[ast.expr]) -> bool:
    if expr is None:
        return False
    return not (isinstance(expr, ast.Constant) and not expr.value)


def own_returns(fn: FunctionNode) -> List[Optional[ast.expr]]:
    return [value for _, value in own_return_values(fn)]


def own_return_values(fn: FunctionNode) -> List[Tuple[ast.AST, Optional[ast.expr]]]:
    if isinstance(fn, ast.Lambda):
        return [(fn.body, fn.body)]
    found = [(n, n.value) for n in own_nodes(fn) if isinstance(n, ast.Return)]
    return sorted(found, key=lambda pair: (pair[0].lineno, pair[0].col_offset))  # type: ignore[attr-defined]


def is_generator(fn: ast.AST) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(fn))  # type: ignore[arg-type]


def has_starred(value: Union[ast.Tuple, ast.List]) -> bool:
    return any(isinstance(e, ast.Starred) for e in value.elts)


def stores(fn: FunctionNode, name: str, model: Optional[FileModel] = None) -> bool:
    """`fn` rebinds its own `name` (nested functions count only through `nonlocal`)."""
    if any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
           for node in (model.facts.own_nodes(fn) if model is not None else own_nodes(fn))):
        return True
    return name in spelled(fn, model).nonlocals


def loads(fn: FunctionNode, name: str, model: Optional[FileModel] = None) -> bool:
    return name in spelled(fn, model).name_ids


def names_in(fn: FunctionNode, model: Optional[FileModel] = None) -> Set[str]:
    """Every name `fn` spells (a fresh set: the planner adds the names it takes)."""
    return set(spelled(fn, model).names)


class _Spelled:
    """The names spelled anywhere in a function (nested scopes included), from one walk kept on
    its node: the planner asks of fwd and bwd several times per derivative."""

    __slots__ = ("name_ids", "names", "nonlocals")

    def __init__(self, fn: FunctionNode) -> None:
        name_ids: Set[str] = set()
        names: Set[str] = set()
        nonlocals: Set[str] = set()
        for node in walk(fn):
            cls = node.__class__
            if cls is ast.Name:
                name_ids.add(node.id)  # type: ignore[attr-defined]
            elif cls is ast.arg:
                names.add(node.arg)  # type: ignore[attr-defined]
            elif cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                names.add(node.name)  # type: ignore[attr-defined]
            elif cls is ast.Nonlocal:
                nonlocals.update(node.names)  # type: ignore[attr-defined]
        self.name_ids, self.names, self.nonlocals = frozenset(name_ids), frozenset(names | name_ids), frozenset(nonlocals)


def spelled(fn: FunctionNode, model: Optional[FileModel] = None) -> _Spelled:
    """The names `fn` spells, kept per file when the model is given (computed afresh otherwise:
    the cross-module writer's one question)."""
    return model.index.of_node(_Spelled, fn) if model is not None else _Spelled(fn)


def referenced_elsewhere(model: FileModel, rule: RuleFunction, registration: ast.AST) -> bool:
    """A use of the rule's name other than the registration (a direct call would break)."""
    index = model.index
    inside = set(walk(registration))
    name = rule.name or ""
    if any(n not in inside for n in index.names(name) if isinstance(n.ctx, ast.Load)):
        return True
    if isinstance(rule.node, ast.Lambda):
        return False
    return any(n not in inside for n in index.attributes(name))


def partial_jit_calls(model: FileModel) -> List[ast.Call]:
    """The module's `partial(jax.jit, ...)(f)` calls, found once per model (once per derivative
    made planning quadratic in the module's size): kept per file, by the module's node."""
    return model.facts.of_model(partial_jit_in)


def partial_jit_in(model: FileModel) -> List[ast.Call]:
    found = []
    for call in model.index.of_type(ast.Call):
        inner = call.func  # type: ignore[attr-defined]
        if (isinstance(inner, ast.Call) and inner.args and call.args  # type: ignore[attr-defined]
                and model.index.qualname(inner.func) in PARTIAL and model.index.qualname(inner.args[0]) == "jax.jit"):
            found.append(call)  # type: ignore[arg-type]
    return found


def jit_static(model: FileModel, d: CustomDerivative, moved: Tuple[int, ...]) -> List[Tuple[int, str]]:
    """(moved position, where) for each moved position a `jax.jit` marks static: a stacked
    `@partial(jax.jit, static_argnames=...)` on the primal or `jax.jit(f, static_argnums=...)`."""
    from vjplint.facts.infer import static_boundaries  # the boundaries VJP102 already reads

    sig = d.signature
    assert sig is not None
    found: List[Tuple[int, str]] = []
    traced = model.traced.get(d.primal) if d.primal is not None else None
    if traced is not None and traced.how == "jax.jit":
        found.extend((p, "the `jax.jit` decorating it") for p in moved if sig.positional[p] in traced.static_params)
    for call, position in static_boundaries(model, d):
        if position in moved and model.index.qualname(call.func) == "jax.jit":
            found.append((position, f"`jax.jit(...)` at line {call.lineno}"))
    for call in partial_jit_calls(model):  # `partial(jax.jit, static_argnames=...)(f)`
        inner = call.func  # type: ignore[attr-defined]
        if model.facts.derivative_named(call.args[0]) is not d:  # type: ignore[attr-defined]
            continue
        static = static_positions(model, inner, sig)
        found.extend((p, f"`partial(jax.jit, ...)(...)` at line {call.lineno}") for p in moved if p in static)
    for site in d.call_sites:  # `f(mode, x)` inside a jitted function whose `mode` is static
        outer = model.traced.get(site.enclosing) if site.enclosing is not None else None
        if outer is None or outer.how != "jax.jit" or not outer.static_params:
            continue
        given = {i - site.positional_offset: a for i, a in enumerate(site.call.args)}
        given.update((sig.positional.index(k.arg), k.value) for k in site.call.keywords if k.arg in sig.positional)
        for p in moved:
            arg = given.get(p)
            if isinstance(arg, ast.Name) and arg.id in outer.static_params:
                where = getattr(site.enclosing, "name", "a function")
                found.append((p, f"the `jax.jit` of `{where}`, which passes its static `{arg.id}` here "
                                 f"(line {site.call.lineno})"))
    return sorted(found)


def static_positions(model: FileModel, call: ast.Call, sig: Signature) -> Set[int]:
    """The positions `static_argnums`/`static_argnames` of `call` name (unreadable: none)."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    n = len(sig.positional)
    nums = constant_value(model.index, keywords["static_argnums"]) if "static_argnums" in keywords else ()
    names = constant_value(model.index, keywords["static_argnames"]) if "static_argnames" in keywords else ()
    nums = (nums,) if isinstance(nums, int) else nums if isinstance(nums, (tuple, list)) else ()
    names = (names,) if isinstance(names, str) else names if isinstance(names, (tuple, list)) else ()
    return {p % n for p in nums if type(p) is int and -n <= p < n} | \
        {sig.positional.index(x) for x in names if x in sig.positional}


def fresh_name(candidates: Sequence[str], taken: Set[str]) -> str:
    for name in candidates:
        if name not in taken:
            return name
    base, n = candidates[0], 1
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def rules_written_for_other_nondiff(d: CustomDerivative, bwd: RuleFunction, sig: Signature) -> Optional[str]:
    """Why bwd's leading (nondiff) parameters show it was written for other nondiff positions, or
    None: one is named after a different parameter of the primal (`def bwd(threshold, reg, res, g)`
    for nondiff_argnums=(0, 1) of `f(x, threshold, reg)`). Moving an argument would then rewrite
    rules that do not match the declaration; fixing nondiff_argnums comes first."""
    if bwd.node is None or isinstance(bwd.node, ast.Lambda) and not bwd.node.args.args:
        return None
    params = [a.arg for a in (*bwd.node.args.posonlyargs, *bwd.node.args.args)]
    order = sorted(d.nondiff)
    if len(params) != len(order) + 2:
        return None
    for name, position in zip(params, order):
        if name != sig.positional[position] and name in sig.positional:
            return (f"bwd's parameter `{name}` receives nondiff position {position} (`{sig.positional[position]}`) "
                    f"but is named after position {sig.positional.index(name)} of the primal: the rules may be "
                    f"written for other nondiff_argnums; check nondiff_argnums first")
    return None
