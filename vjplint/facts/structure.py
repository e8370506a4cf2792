"""The container structure of a custom_vjp primal's output and of its fwd's primal output.

JAX wants fwd's first element to have the primal's output structure (docs/facts/structure.md).
A structure here is ("array",) for one array, or (container, n) for a tuple/list of n values;
None when the code does not show it. An array is only claimed where vjplint's whitelist proves it
(`not_a_sequence`), or for an element unpacked from a call of the primal whose returned literal
holds a proven array at that place; containers come from `model.facts.values()`.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterator, List, NamedTuple, Optional, Set, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel, Registration, RuleFunction
from vjplint.model.semantic import FunctionNode
from vjplint.facts.registry import query

Structure = Tuple[str, int]  # ("array", 1) or ("tuple" | "list", length)
ARRAY = "array"
ELEMENT = "element"  # one element of the primal's own output, whatever it is


class FwdOutput(NamedTuple):
    node: ast.AST  # where to report: fwd's first element, or its whole return
    expr: Optional[ast.expr]  # the first element's expression, when the return is a literal pair
    structure: Structure
    why: str


def describe(s: Structure) -> str:
    if s[0] == ELEMENT:
        return "one element of the decorated function's own output"
    return "one array" if s[0] == ARRAY else f"a {s[1]}-element {s[0]}"


def _container(model: FileModel, expr: ast.expr) -> Optional[Structure]:
    kind = model.facts.values().of(expr)
    if kind.tag in ("tuple", "list") and kind.items is not None:
        return kind.tag, len(kind.items)
    return None


@query
def primal_structure(model: FileModel, d: CustomDerivative) -> Optional[Tuple[Structure, str]]:
    """What every return of the primal is, when they agree and the code shows it."""
    if d.primal is None:
        return None
    returns = model.facts.returns_of(d.primal)
    if not returns or any(value is None for _, value in returns):
        return None
    found = set()
    for _, value in returns:
        s = _container(model, value)  # type: ignore[arg-type]
        if s is None and (model.facts.not_a_sequence(value, d.primal) == "an array" or isinstance(value, ast.Constant)
                          and type(value.value) in (int, float, complex)):  # `return 0.0`: one leaf, as an array
            s = (ARRAY, 1)
        if s is None:
            return None
        found.add(s)
    if len(found) != 1:
        return None
    s = found.pop()
    shown = model.quote(returns[0].value, 50)  # type: ignore[arg-type]
    return s, f"`{d.name}` returns `{shown}`" + (f" at line {returns[0].node.lineno}" if len(returns) == 1 else "")


def _primal_call(model: FileModel, d: CustomDerivative, expr: ast.expr, fwd: FunctionNode) -> bool:
    """`f(x)` itself, or a name `fwd` assigns once to it."""
    if isinstance(expr, ast.Name):
        scope = model.index.scopes.get(fwd)
        bindings = scope.bindings.get(expr.id, []) if scope is not None else []
        if len(bindings) != 1 or bindings[0].value is None:
            return False
        expr = bindings[0].value
    return isinstance(expr, ast.Call) and model.facts.derivative_named(expr.func) is d


def _primal_element_is_array(model: FileModel, d: CustomDerivative, index: int, length: Optional[int]) -> bool:
    """Every return of the primal is a tuple literal holding a proven array at `index`."""
    assert d.primal is not None
    returns = model.facts.returns_of(d.primal)
    for _, value in returns:
        if not isinstance(value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in value.elts):
            return False
        if length is not None and len(value.elts) != length or not -len(value.elts) <= index < len(value.elts):
            return False
        if model.facts.not_a_sequence(value.elts[index], d.primal) != "an array":
            return False
    return bool(returns)


def _unpacked_primal_element(model: FileModel, d: CustomDerivative, expr: ast.expr, fwd: FunctionNode,
                             need_array: bool = True) -> bool:
    """`a, b, c = f(x)` then `a`, or `f(x)[0]` / `out[0]` with `out = f(x)`: an element of the
    primal's own output (a proven array of it with `need_array`; any element otherwise: a strict
    part of a finite pytree never has the whole tree's structure)."""
    if d.primal is None:
        return False
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and \
            isinstance(expr.slice.value, int) and not isinstance(expr.slice.value, bool):
        return _primal_call(model, d, expr.value, fwd) and (
            _primal_element_is_array(model, d, expr.slice.value, None) if need_array
            else _primal_element_exists(model, d, expr.slice.value, None))
    if not isinstance(expr, ast.Name):
        return False
    scope = model.index.scopes.get(fwd)
    bindings = scope.bindings.get(expr.id, []) if scope is not None else []
    if len(bindings) != 1 or not isinstance(bindings[0].node, ast.Assign):
        return False
    stmt = bindings[0].node
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Tuple) or \
            not _primal_call(model, d, stmt.value, fwd):
        return False
    names = [t.id if isinstance(t, ast.Name) else None for t in stmt.targets[0].elts]
    if expr.id not in names:
        return False
    if need_array:
        return _primal_element_is_array(model, d, names.index(expr.id), len(names))
    return _primal_element_exists(model, d, names.index(expr.id), len(names))


def _primal_element_exists(model: FileModel, d: CustomDerivative, index: int, length: Optional[int]) -> bool:
    """Every return of the primal is a tuple literal of `length` (when given) with an element at `index`."""
    assert d.primal is not None
    returns = model.facts.returns_of(d.primal)
    for _, value in returns:
        if not isinstance(value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in value.elts):
            return False
        if length is not None and len(value.elts) != length or not -len(value.elts) <= index < len(value.elts):
            return False
    return bool(returns)


@query
def fwd_outputs(model: FileModel, d: CustomDerivative, fwd: FunctionNode) -> List[FwdOutput]:
    """fwd's primal output at each of its returns, where its structure is shown."""
    out: List[FwdOutput] = []
    for node, value in model.facts.returns_of(fwd):
        if value is None:
            continue
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2 and \
                not any(isinstance(e, ast.Starred) for e in value.elts):
            first = value.elts[0]
            s = _container(model, first)
            if s is None and (model.facts.not_a_sequence(first, fwd) == "an array"
                              or _unpacked_primal_element(model, d, first, fwd)):
                s = (ARRAY, 1)
            elif s is None and _unpacked_primal_element(model, d, first, fwd, need_array=False):
                s = (ELEMENT, 1)
            if s is not None:
                kind = model.facts.values().of(first)
                quoted = f"`{model.quote(first, 50)}`"
                if s[0] == ELEMENT:
                    why = f"{quoted} is taken from the result of a call of `{d.name}` itself"
                elif isinstance(first, (ast.Tuple, ast.List)) or not kind.why:
                    why = quoted
                else:
                    why = kind.why if kind.why.startswith(quoted) else f"{quoted}; {kind.why}"
                out.append(FwdOutput(first, first, s, why))
            continue
        kind = model.facts.values().of(value)
        if kind.tag in ("tuple", "list") and kind.items is not None and len(kind.items) == 2:
            first_kind = kind.items[0]
            if first_kind.tag in ("tuple", "list") and first_kind.items is not None:
                out.append(FwdOutput(value, None, (first_kind.tag, len(first_kind.items)),
                                     f"the first element of `{model.quote(value, 40)}` ({first_kind.why})"))
    return out


@query
def registered_here(model: FileModel, d: CustomDerivative, reg_node: ast.AST) -> bool:
    """False when the registration at `reg_node` follows a later definition of the same name
    (a notebook or script that redefines `f`): the registration is that definition's."""
    line = getattr(reg_node, "lineno", None)
    start = getattr(d.anchor, "lineno", None)
    if line is None or start is None:
        return True
    if line < start:
        return False  # it registers an earlier definition of the name
    for other in model.same_name(d):
        if other is d:
            continue
        at = getattr(other.anchor, "lineno", None)
        if at is not None and start < at <= line:
            return False
    return True


@query
def own_registrations(model: FileModel, d: CustomDerivative) -> List[Registration]:
    """The registrations that apply to this definition of `d`'s name: the collector files every
    `f.defjvps(...)` of a name under its first definition, so a redefined name's are gathered here."""
    found: List[Registration] = []
    for other in model.same_name(d):
        found.extend(reg for reg in other.registrations if registered_here(model, d, reg.node))
    return found


class RegisteredBwd(NamedTuple):
    d: CustomDerivative
    fwd: Optional[RuleFunction]
    bwd: RuleFunction
    params: List[str]  # bwd's positional parameters JAX passes: the nondiff values, residuals, cotangent


@query
def registered_bwds(model: FileModel, wanted: Callable[[CustomDerivative], bool] = lambda d: True
                    ) -> Iterator[RegisteredBwd]:
    """Each jax custom_vjp's bwd registered for this definition, with as many positional
    parameters as JAX passes (len(nondiff) + 2), each bwd once (a rule shared by several
    derivatives is read under the first `wanted` one)."""
    seen: Set[int] = set()
    for d in model.derivatives:
        if d.api != "jax" or d.kind != "vjp" or d.primal is None or d.nondiff_unresolved or not wanted(d):
            continue
        for reg, fwd, bwd in model.facts.checked_vjp_rules(d):
            if bwd is None or bwd.node is None or bwd.node in seen or not registered_here(model, d, reg.node):
                continue
            seen.add(bwd.node)
            params = model.signature(bwd.node).positional[bwd.bound_positional:]
            if len(params) == len(d.nondiff) + 2:
                yield RegisteredBwd(d, fwd, bwd, params)
