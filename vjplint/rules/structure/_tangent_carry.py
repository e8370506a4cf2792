"""Values of a jvp rule that keep the structure of a tangent JAX passed it: the names a rule
unpacks `primals`/`tangents` into, and expressions that carry one of them unchanged in structure
(`t`, `jnp.where(c, 0.0, t)`, `2.0 * t`, `tree_map(f, t)`, a helper of the module returning its
parameter so transformed). Read by VJP333."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.facts.contract import SELECTS
from vjplint.facts.values import TREE_MAPS
from vjplint.model.semantic import named_function
from vjplint.syntax.walk import walk

_DEPTH = 3


def unpacked(fn, param: str) -> List[Optional[str]]:
    """The names `fn` unpacks `param` into once (`a, b = primals`, `(a,), (t,) = primals, tangents`,
    `x, = x`), in order; [] when it does not."""
    for node in walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        pairs = [(target, value)]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        for t, v in pairs:
            if isinstance(v, ast.Name) and v.id == param and isinstance(t, (ast.Tuple, ast.List)):
                return [e.id if isinstance(e, ast.Name) else None for e in t.elts]
    return []


def carries(expr: ast.expr, name: str, model, fn=None, depth: int = 0) -> bool:
    """`expr` is `name`, `jnp.where(c, ..., name)`, arithmetic of `name` with a constant,
    `tree_map(f, name)`, or a call of a helper of the module that returns its parameter in one of
    these ways (reassigned in it too: `x = tree_map(g, x)`), given `name` in that parameter's place."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, ast.Name):
        return expr.id == name
    if isinstance(expr, ast.BinOp):
        sides = (expr.left, expr.right)
        return any(carries(e, name, model, fn, depth + 1) for e in sides) and any(isinstance(e, ast.Constant) for e in sides)
    if not isinstance(expr, ast.Call):
        return False
    q = model.index.qualname(expr.func) or ""
    if q in SELECTS:
        return any(carries(a, name, model, fn, depth + 1) for a in expr.args[1:])
    if q in TREE_MAPS:
        return len(expr.args) >= 2 and not expr.keywords and carries(expr.args[1], name, model, fn, depth + 1)
    helper = named_function(model.index, expr.func)
    if helper is None or helper is fn or isinstance(helper, (ast.Lambda, ast.AsyncFunctionDef)) or \
            any(isinstance(a, ast.Starred) for a in expr.args):
        return False
    params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
    given = [p for p, a in zip(params, expr.args) if carries(a, name, model, fn, depth + 1)]
    returns = model.facts.returns_of(helper)
    return len(given) == 1 and bool(returns) and all(
        value is not None and _keeps(value, given[0], helper, model, depth + 1) for _, value in returns)


def _keeps(expr: ast.expr, param: str, helper, model, depth: int) -> bool:
    """`expr`, returned by `helper`, is its parameter `param` carried, through names every
    assignment of which carries `param` or themselves."""
    if isinstance(expr, ast.Name) and expr.id != param:
        return False
    if isinstance(expr, ast.Name):
        scope = model.index.scopes.get(helper)
        bindings = [b for b in (scope.bindings.get(param, []) if scope is not None else []) if b.kind != "param"]
        return all(b.kind == "assign" and b.value is not None and isinstance(b.node, ast.Assign)
                   and isinstance(b.node.targets[0], ast.Name) and carries(b.value, param, model, helper, depth)
                   for b in bindings)
    return carries(expr, param, model, helper, depth)


def whole(expr: ast.expr, name: str, model) -> bool:
    """`expr` is the parameter `name` itself, or a `tree_map` over it: the whole tuple JAX passed."""
    if isinstance(expr, ast.Name):
        return expr.id == name
    return isinstance(expr, ast.Call) and (model.index.qualname(expr.func) or "") in TREE_MAPS and \
        len(expr.args) >= 2 and not expr.keywords and whole(expr.args[1], name, model)


def container(model, expr: Optional[ast.expr]) -> Optional[Tuple[str, str]]:
    """(kind, words) of the pytree node `expr` is, where the module shows it: a tuple, list or dict
    (a literal, or a name or helper giving one), or an instance of a class of the module (a
    NamedTuple, a dataclass: a node of its own, not a tuple's). None otherwise."""
    if expr is None:
        return None
    kind = model.facts.values().of(expr)
    if kind.tag in ("tuple", "list", "dict"):
        return kind.tag, f"a {kind.tag}"
    cls = kind.node
    if kind.tag == "record" and isinstance(cls, ast.ClassDef) and not any(
            (model.index.qualname(b) or "").rsplit(".", 1)[-1] in ("tuple", "list", "Tuple", "List", "dict", "Dict")
            for b in cls.bases):
        return f"record {cls.name}", f"a `{cls.name}` instance"
    return None
