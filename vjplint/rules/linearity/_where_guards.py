"""A `jnp.where`/`lax.select` guard in a derivative rule that replaces an expression by its own
limit at one point (`where(x == 0, 1.0, sin(x) / x)`): the constant branch has derivative 0, so
the expression's slope there is lost to second derivatives. Found by evaluating the rule on
Python floats near the guarded value (vjplint.facts.scalar_eval); VJP612 reports each finding."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from vjplint.facts.scalar_eval import UNKNOWN, ScalarEvaluator, Unsupported, literal_number
from vjplint.facts.structure import registered_here
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.model.semantic import child_nodes
from vjplint.syntax.walk import walk

# Values of the other arguments (positive and inside (-1, 1), as VJP610's), one point each.
SAMPLES = (0.37, 0.81, 0.58, 0.23, 0.66, 0.44, 0.72)
POINTS = 2
# Distances from the guarded value, largest first: the expression must approach the constant
# (the second much closer than the first) with the same one-sided slope at both.
STEPS = (1e-2, 1e-3)
# Steps for the slope of the whole output, with the where as written and frozen at its constant.
FINE_STEPS = (1e-3, 1e-4)
SLOPE_TOL = 0.2
MIN_SLOPE = 1e-3
SELECTS = ("jax.numpy.where", "jax.lax.select")


@dataclass
class Guard:
    """`where(name == value, constant, expression)`, however spelled."""

    call: ast.Call
    stmt: ast.stmt  # the rule's top-level statement holding the call
    name: str
    value: float
    constant: float
    expression: ast.expr


@dataclass
class DroppedSlope:
    """`guard` in `rule` (of `d`) drops the expression's `slope` at the guarded value; the
    expression is `value` at `guard.value + h`."""

    d: CustomDerivative
    rule: RuleFunction
    guard: Guard
    slope: float
    h: float
    value: float


def dropped_slopes(model: FileModel) -> List[DroppedSlope]:
    """Every guard of a plain jvp rule or bwd registered in the module that drops a slope its
    rule's output feels, in the order of the module's derivatives and their rules."""
    return _Guards(model).found()


class _Guards:
    """The search: each candidate guard measured on the rule's scalar evaluation."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._found: List[DroppedSlope] = []

    def found(self) -> List[DroppedSlope]:
        evaluator = ScalarEvaluator(self.model, equality=True)
        seen: Set[int] = set()
        for d in self.model.derivatives:
            sig = d.signature
            if d.api != "jax" or d.primal is None or d.bound_self or d.nondiff_unresolved or sig is None \
                    or sig.vararg or sig.kwonly:
                continue
            if d.kind == "jvp":
                for reg, rule in self.model.facts.jvp_rules(d):
                    if _plain(rule) and registered_here(self.model, d, reg.node) and rule.node not in seen:
                        seen.add(rule.node)
                        self._check_rule(evaluator, d, rule, None)
            else:
                for reg, fwd, bwd in self.model.facts.checked_vjp_rules(d):
                    if bwd is not None and _plain(bwd) and registered_here(self.model, d, reg.node) \
                            and bwd.node not in seen:
                        seen.add(bwd.node)
                        self._check_rule(evaluator, d, bwd, fwd if fwd is not None and _plain(fwd) else None)
        return self._found

    def _check_rule(self, ev: ScalarEvaluator, d: CustomDerivative, rule: RuleFunction,
                    fwd: Optional[RuleFunction]) -> None:
        fn = rule.node
        assert isinstance(fn, ast.FunctionDef)
        params = self.model.signature(fn).positional
        if len(params) < 2 + len(d.nondiff):
            return
        tangent_parts = _tangent_parts(self.model, fn) if fwd is None and d.kind == "jvp" else None
        if d.kind == "jvp" and tangent_parts is None:
            return
        nondiff = {name for _, name in d.nondiff_names()} | _tainted(fn, params[-1])
        for guard in self._guards(ev, fn):
            if guard.name in nondiff or (tangent_parts is not None and not _inside(guard.call, tangent_parts)):
                continue
            if self.model.facts.integers().evidence(_compared_name(guard.call)) is not None:
                continue
            found = self._measure(ev, d, rule, fwd, guard)
            if found is None:
                continue
            lost = self._lost(ev, d, rule, fwd, guard)
            if lost is not None and abs(lost) < max(MIN_SLOPE * max(1.0, abs(guard.constant)), 0.01 * abs(found[0])):
                continue  # the output does not feel the lost slope there (it is multiplied by 0)
            self._found.append(DroppedSlope(d, rule, guard, *found))

    def _guards(self, ev: ScalarEvaluator, fn: ast.FunctionDef) -> Iterator[Guard]:
        for stmt in fn.body:
            for node in _own_nodes(stmt):
                if not isinstance(node, ast.Call) or len(node.args) != 3 or node.keywords \
                        or (self.model.index.qualname(node.func) or "") not in SELECTS:
                    continue
                cond, yes, no = node.args
                if not isinstance(cond, ast.Compare) or len(cond.ops) != 1 \
                        or not isinstance(cond.ops[0], (ast.Eq, ast.NotEq)):
                    continue
                left, right = cond.left, cond.comparators[0]
                name, value = (left, _number(ev, right)) if isinstance(left, ast.Name) \
                    else (right, _number(ev, left))
                if not isinstance(name, ast.Name) or value is None:
                    continue
                const_node, expression = (yes, no) if isinstance(cond.ops[0], ast.Eq) else (no, yes)
                constant = _number(ev, const_node)
                if constant is None or _number(ev, expression) is not None:
                    continue
                yield Guard(node, stmt, name.id, value, constant, expression)

    def _measure(self, ev: ScalarEvaluator, d: CustomDerivative, rule: RuleFunction, fwd: Optional[RuleFunction],
                 guard: Guard) -> Optional[Tuple[float, float, float]]:
        """(slope, the step, the expression's value there) when EXPR tends to CONST with a
        clearly non-zero slope at every sample point that can be evaluated, else None."""
        slopes: List[Tuple[float, float, float]] = []
        for k in range(POINTS):
            sides: List[List[Tuple[float, float]]] = []
            for side in (1.0, -1.0):
                values: List[Tuple[float, float]] = []
                for step in STEPS:
                    h = side * step * max(1.0, abs(guard.value))
                    try:
                        values.append((h, self._expression_at(ev, d, rule, fwd, guard, guard.value + h, k)))
                    except Unsupported:
                        break
                if len(values) == len(STEPS):
                    sides.append(values)
            if not sides:
                continue
            slope = _limit_slope(sides, guard.constant)
            if slope is None:
                return None
            slopes.append((slope, sides[0][-1][0], sides[0][-1][1]))
        if not slopes:
            return None
        return slopes[0]

    def _expression_at(self, ev: ScalarEvaluator, d: CustomDerivative, rule: RuleFunction,
                       fwd: Optional[RuleFunction], guard: Guard, at: float, k: int) -> float:
        value = ev.value(guard.expression, self._env(ev, d, rule, fwd, guard, guard.stmt, at, k))
        if not isinstance(value, float):
            raise Unsupported("not a number")
        return value

    def _env(self, ev: ScalarEvaluator, d: CustomDerivative, rule: RuleFunction, fwd: Optional[RuleFunction],
             guard: Guard, stop: ast.stmt, at: float, k: int) -> Dict[str, Any]:
        """The rule's names when `stop` starts, the guarded name pinned to `at` (and the primal's
        argument of that name too), the other arguments at sample point `k`, unit tangents or
        cotangent."""
        sig = d.signature
        assert sig is not None and rule.node is not None
        point = [SAMPLES[(k + 2 * i) % len(SAMPLES)] for i in range(len(sig.positional))]
        point = [at if p == guard.name else v for p, v in zip(sig.positional, point)]
        params = self.model.signature(rule.node).positional
        lead: Dict[str, Any] = {p: UNKNOWN for p in params[:-2]}
        if d.kind == "jvp":
            diff = [v for i, v in enumerate(point) if i not in d.nondiff]
            args = {**lead, params[-2]: tuple(diff), params[-1]: tuple(1.0 for _ in diff)}
        else:
            res: Any = UNKNOWN
            if fwd is not None and fwd.node is not None:
                try:
                    out = ev.call(fwd.node, point)
                    if isinstance(out, tuple) and len(out) == 2:
                        res = out[1]
                except Unsupported:
                    pass
            args = {**lead, params[-2]: res, params[-1]: 1.0}
        return ev.env_at(rule.node, args, stop, {guard.name: at})

    def _lost(self, ev: ScalarEvaluator, d: CustomDerivative, rule: RuleFunction, fwd: Optional[RuleFunction],
              guard: Guard) -> Optional[float]:
        """How much the slope of the rule's output (the tangent, or each cotangent) along the
        guarded name changes near the guard when the where is frozen at its constant, as JAX
        differentiates it at the guard; None when the output cannot be evaluated there."""
        fn = rule.node
        assert isinstance(fn, ast.FunctionDef)
        last = fn.body[-1]
        if not isinstance(last, ast.Return) or last.value is None or len(self.model.facts.returns_of(fn)) != 1:
            return None
        if d.kind == "jvp":
            if not isinstance(last.value, ast.Tuple) or len(last.value.elts) != 2:
                return None
            outputs: List[ast.expr] = [last.value.elts[1]]
        else:
            outputs = list(last.value.elts) if isinstance(last.value, ast.Tuple) else [last.value]
        lost: Optional[float] = None
        for k in range(POINTS):
            for side in (1.0, -1.0):
                for i, output in enumerate(outputs):
                    slopes = []
                    for frozen in ({}, {guard.call: guard.constant}):
                        ev.frozen = frozen
                        try:
                            values = []
                            for step in FINE_STEPS:
                                h = side * step * max(1.0, abs(guard.value))
                                env = self._env(ev, d, rule, fwd, guard, last, guard.value + h, k)
                                v = ev.value(output, env)
                                if not isinstance(v, float):
                                    raise Unsupported("not a number")
                                values.append((h, v))
                        except Unsupported:
                            break
                        finally:
                            ev.frozen = {}
                        (h1, v1), (h2, v2) = values
                        slopes.append((v2 - v1) / (h2 - h1))
                    if len(slopes) == 2 and (lost is None or abs(slopes[0] - slopes[1]) > abs(lost)):
                        lost = slopes[0] - slopes[1]
        return lost


def _plain(rule: RuleFunction) -> bool:
    return isinstance(rule.node, ast.FunctionDef) and not rule.bound_positional and not rule.bound_keywords


def _number(ev: ScalarEvaluator, e: ast.expr) -> Optional[float]:
    """A number literal or a module constant bound once to one."""
    n = literal_number(e)
    if n is None and isinstance(e, ast.Name):
        n = ev.constants().get(e.id)
    return n


def _compared_name(call: ast.Call) -> ast.expr:
    cond = call.args[0]
    assert isinstance(cond, ast.Compare)
    return cond.left if isinstance(cond.left, ast.Name) else cond.comparators[0]


def _own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement, nested functions and classes left out."""
    todo: List[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        yield node
        for child in child_nodes(node):  # `ast.iter_child_nodes`' order, without expression contexts
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(child)


def _limit_slope(sides: List[List[Tuple[float, float]]], constant: float) -> Optional[float]:
    """The one-sided slope of the expression at the guarded value, when it tends to `constant`
    on every side measured, with one slope, clearly not zero; else None."""
    scale = max(1.0, abs(constant))
    found: List[float] = []
    for values in sides:
        (h1, v1), (h2, v2) = values[0], values[-1]
        d1, d2 = abs(v1 - constant), abs(v2 - constant)
        if d2 > 1e-2 * scale or d2 > 0.5 * d1:
            return None  # not tending to the constant (or flat at it)
        s1, s2 = (v1 - constant) / h1, (v2 - constant) / h2
        if abs(s1 - s2) > SLOPE_TOL * max(abs(s1), abs(s2)):
            return None
        found.append(s2)
    if any(abs(s - found[0]) > SLOPE_TOL * max(abs(s), abs(found[0])) for s in found):
        return None  # a kink: no one slope to lose
    if abs(found[0]) < MIN_SLOPE * scale:
        return None
    return sum(found) / len(found)


def _tangent_parts(model: Any, fn: ast.FunctionDef) -> Optional[List[ast.AST]]:
    """The expressions a jvp rule's tangent output is computed from: the tangent elements of its
    returned pairs and the values of the top-level assignments they read, transitively; None
    when a return is not a pair literal."""
    returns = model.facts.returns_of(fn)
    if not returns or any(not isinstance(r.value, ast.Tuple) or len(r.value.elts) != 2 for r in returns):
        return None
    parts: List[ast.AST] = [r.value.elts[1] for r in returns]
    needed = {n.id for p in parts for n in walk(p) if isinstance(n, ast.Name)}
    for stmt in reversed(fn.body):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            stored = {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)}
            if stored & needed:
                parts.append(stmt.value)
                needed |= {n.id for n in walk(stmt.value) if isinstance(n, ast.Name)}
    return parts


def _tainted(fn: ast.FunctionDef, source: str) -> Set[str]:
    """The names the rule's top-level statements derive from parameter `source` (the tangents
    or the cotangent), unpacking `(x,), (dx,) = primals, tangents` element by element."""
    tainted = {source}

    def bind(target: ast.expr, value: Optional[ast.expr]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                bind(t, v)
        elif value is None or any(isinstance(n, ast.Name) and n.id in tainted for n in walk(value)):
            tainted.update(n.id for n in walk(target) if isinstance(n, ast.Name))

    for stmt in fn.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                bind(target, stmt.value)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            bind(stmt.target, stmt.value)
        elif not isinstance(stmt, (ast.Expr, ast.Return, ast.Pass, ast.Assert)):
            for node in walk(stmt):  # names bound in a compound statement: tainted when in doubt
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    tainted.add(node.id)
    return tainted


def _inside(node: ast.AST, parts: List[ast.AST]) -> bool:
    return any(node is n for p in parts for n in walk(p))
