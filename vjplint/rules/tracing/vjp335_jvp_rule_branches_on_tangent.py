from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.facts.linearity import Linearity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import FunctionNode
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.tracing._traced_names import COMPREHENSIONS, Taint, array_test, comprehension_targets
from vjplint.rules.tracing._traced_names import traced as traced_name

# Reading these gives Python values even on a tracer.
STATIC_ATTRS = frozenset({"shape", "dtype", "ndim", "size", "aval", "weak_type", "sharding"})
STATIC_CALLS = frozenset({"builtins.len", "builtins.type", "builtins.isinstance", "builtins.id",
                          "builtins.callable", "builtins.hasattr", "builtins.getattr"})
# NumPy/jax.numpy functions that read only metadata and return Python values (`np.shape(t)`).
METADATA_FUNCTIONS = frozenset({"shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "isscalar",
                                "issubdtype", "broadcast_shapes", "promote_types", "can_cast", "finfo", "iinfo",
                                "typeof", "get_aval"})
METADATA_MODULES = ("numpy.", "jax.numpy.", "jax.core.", "jax.dtypes.", "jax._src.")
# Python conversions that ask a value for a concrete scalar.
CONVERSIONS = frozenset({"builtins.bool", "builtins.float", "builtins.int", "builtins.complex"})
CONCRETE_METHODS = frozenset({"item", "tolist", "__bool__", "__float__", "__int__"})


class JvpRuleBranchesOnTangent(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule that turns a value computed from its tangents into a Python
    value: an `if`, `while`, `assert`, conditional expression or `and`/`or` testing it, or
    `bool()`, `float()`, `int()`, `.item()` of it (`if t == 0: return out, t`), a comprehension
    over the tangents or their leaves included (`if not all(jnp.all(jnp.isfinite(t)) for t in
    jax.tree_util.tree_leaves(tangents)):`). Reading a
    tangent's metadata (`t.shape`, `t.dtype`, `len(t)`), its type (`isinstance(t, SymbolicZero)`,
    `type(t) is SymbolicZero`) or testing `t is None` gives Python values and is not reported.
    Helpers of the same module the rule passes a tangent to are followed (one level).
    An `if`/`while`/`assert`/conditional expression in the rule that tests an array computed from
    its primals (an input validation, `if not all(jnp.all(jnp.isfinite(p)) for p in
    tree_leaves(primals)): raise ...`, or `if jnp.max(x) > 30:`), in the rule or in a function of
    the module it passes a primal to, is reported too, unless the
    primal function itself makes the same kind of test on its inputs (code written for eager use).

    ## Why is this bad?
    Under `jax.grad` (and `jacrev`, `value_and_grad`, `linearize`, and anything under `jit` or
    `vmap`) JAX calls the rule with tracers for tangents, even when the primals are concrete:
    converting one to a Python bool raises `TracerBoolConversionError` (`float()` raises
    `ConcretizationTypeError`). Eager `jax.jvp` passes concrete tangents, so the rule passes a
    forward-mode test and fails in the first gradient. The primals are tracers under `jax.jit`
    (of a gradient or of `jax.jvp`) and `jax.vmap`: a test of them passes eager `jax.grad` and
    raises `TracerBoolConversionError` there (E39 by the primals, heldout7's `jvp_primal_guard`;
    fixtures/rules/VJP335/fire_primal_*.py run on JAX 0.10.2). Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e39_jvp_rule_bool_on_tangent.py`, census row E39 of
    `docs/facts/jax-errors.md`): `jax.grad` raises `TracerBoolConversionError: Attempted boolean
    conversion of traced array with shape bool[]`.

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if t == 0:
            return f(x), t
        return f(x), jnp.sign(x) * t
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), jnp.sign(x) * t     # a zero tangent needs no special case
    ```
    (use `jnp.where` or `lax.cond` where a value must be selected, or `symbolic_zeros=True`
    with `type(t) is SymbolicZero` to skip work for tangents JAX knows are zero).

    ## Fix safety
    No fix: what the branch meant (a zero shortcut, a clip, a mode switch) decides the rewrite.
    """

    CODE = "VJP335"
    NAME = "jvp-rule-branches-on-tangent"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.abs(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if t == 0:
        return f(x), t
    return f(x), jnp.sign(x) * t
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.abs(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if t.ndim == 0 and x.shape == ():
        return f(x), jnp.sign(x) * t
    return f(x), jnp.sign(x) * t
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for _, rule in self.model.facts.jvp_rules(d):
            if rule.node is not None and rule.node not in self._done:
                self._done.add(rule.node)
                self._check_rule(d, rule, rule.node)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, fn: FunctionNode) -> None:
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][rule.bound_positional:]
        if len(params) < 2 or fn.args.vararg is not None:
            return
        label = rule_label(rule, "jvp rule")
        label = label if label.startswith("the ") else f"the {label}"
        checker = self.model.facts.linearity(fn, params[-1])
        found = list(self._concrete_tests(checker, fn, 0, frozenset({fn})))
        inner = {sub for test, *_ in found for sub in ast.walk(test) if sub is not test}
        for test, how, value, where in found:
            if test in inner:  # `t == 0` inside `if t == 0 and x > 0`: one report, the whole test
                continue
            self.report(test, (
                f"{label} of `{d.name}`{where} {how} `{self.quote(value, 40)}`, computed from its tangents: "
                "under `jax.grad` (and `jit`, `vmap`) the tangents are tracers even when the primals are "
                "concrete, and converting one to a Python value raises `TracerBoolConversionError` "
                "(`ConcretizationTypeError` for `float()`/`int()`); eager `jax.jvp` passes concrete tangents, "
                "so only forward-mode tests pass. Compute on the value (`jnp.where`, `lax.cond`) or drop the "
                "special case"))
        if self._primal_branches(d):
            return  # the primal itself branches on its inputs: written for eager use, not a new hazard
        primals = Taint(self.model, fn, {params[-2]: f"the primals `{params[-2]}`"}).names
        for at, test, where in self._primal_tests(fn, primals, 0):
            if at not in inner | {f[0] for f in found}:
                self.report(at, (
                    f"{label} of `{d.name}`{where} branches in Python on `{self.quote(test, 40)}`, computed from its "
                    "primals: under `jax.jit` (of a gradient, or of `jax.jvp`) and `jax.vmap` the primals are "
                    "tracers, and JAX raises `TracerBoolConversionError`; eager `jax.grad` passes concrete "
                    "primals, so the rule passes eager tests. Validate with `checkify`, or compute on the "
                    "value (`jnp.where`, `lax.cond`)"))

    def _primal_tests(self, fn: FunctionNode, traced: dict, depth: int) -> Iterator[tuple]:
        """(node, test, where) for each Python test of `fn` on an array computed from the primals,
        in the rule and (one level) in the module's functions it passes a primal to."""
        for node in self.model.facts.own_nodes(fn):
            if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                test = array_test(self.model, node.test, traced)
                if test is not None:
                    yield node.test, test, ""
            helper = self._helper(node) if depth == 0 and isinstance(node, ast.Call) else None
            if helper is not None and helper is not fn and helper.args.vararg is None:
                names = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
                seeds = {names[i]: names[i] for i, a in enumerate(node.args)
                         if i < len(names) and not isinstance(a, ast.Starred) and traced_name(self.model, a, traced)}
                for at, test, _ in self._primal_tests(helper, Taint(self.model, helper, seeds).names, 1) if seeds else ():
                    yield at, test, f", through `{helper.name}` (called with a primal at line {node.lineno}),"

    def _primal_branches(self, d: CustomDerivative) -> bool:
        """The primal function itself tests an array computed from its differentiable inputs."""
        if d.primal is None:
            return False
        names = [a.arg for a in (*d.primal.args.posonlyargs, *d.primal.args.args)]
        traced = Taint(self.model, d.primal, {n: n for i, n in enumerate(names) if i not in d.nondiff}).names
        return any(isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) and
                   array_test(self.model, n.test, traced) is not None for n in self.model.facts.own_nodes(d.primal))

    def _concrete_tests(self, checker: Linearity, fn: FunctionNode, depth: int,
                        active: frozenset) -> Iterator[tuple]:
        """(node, how, value, where) for each place of `fn` that asks a tangent-computed value for a
        Python value: the node reported, the words for what it does, the value converted, and where
        (a helper) when not in the rule itself."""
        for node in self.model.facts.own_nodes(fn):
            for test, how in _tests_of(node):
                if self._depends(checker, test, 0):
                    yield test, how, test, ""
            if isinstance(node, ast.Call):
                q = self.model.index.qualname(node.func)
                args = [a for a in node.args if not isinstance(a, ast.Starred)]
                if q in CONVERSIONS and len(args) == 1 and self._depends(checker, args[0], 0):
                    yield node, f"calls `{q.split('.')[-1]}()` on", args[0], ""
                elif (isinstance(node.func, ast.Attribute) and node.func.attr in CONCRETE_METHODS
                      and not args and self._depends(checker, node.func.value, 0)):
                    yield node, f"calls `.{node.func.attr}()` on", node.func.value, ""
                elif depth < 1:
                    yield from self._through_helper(checker, node, args, depth, active)

    def _through_helper(self, checker: Linearity, call: ast.Call, args: List[ast.expr], depth: int,
                        active: frozenset) -> Iterator[tuple]:
        helper = self._helper(call)
        if helper is None or helper in active or helper.args.vararg is not None:
            return
        names = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        given = {names[i] for i, a in enumerate(args) if i < len(names) and self._depends(checker, a, 0)}
        if not given:
            return
        inner = self.model.facts.linearity(helper, "", given=given, active=active | {helper})
        for test, how, value, _ in self._concrete_tests(inner, helper, depth + 1, active | {helper}):
            yield test, how, value, f", through `{helper.name}` (called with a tangent at line {call.lineno}),"

    def _helper(self, call: ast.Call) -> Optional[ast.FunctionDef]:
        """A module-level def the call names directly."""
        if not isinstance(call.func, ast.Name):
            return None
        for node in self.model.module.body:
            if isinstance(node, ast.FunctionDef) and node.name == call.func.id:
                return node
        return None

    def _static_helper(self, call: ast.Call) -> bool:
        """A module helper whose every return is a type/identity test (`return not isinstance(t, SymbolicZero)`):
        a Python value under every transform."""
        helper = self._helper(call)
        returns = [n for n in self.model.facts.own_nodes(helper) if isinstance(n, ast.Return)] if helper else []
        return bool(returns) and all(r.value is not None and self._static_expr(r.value) for r in returns)

    def _static_expr(self, e: ast.expr) -> bool:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return self._static_expr(e.operand)
        if isinstance(e, ast.BoolOp):
            return all(self._static_expr(v) for v in e.values)
        if isinstance(e, ast.Compare):
            return all(isinstance(op, (ast.Is, ast.IsNot)) for op in e.ops)
        return isinstance(e, ast.Call) and self.model.index.qualname(e.func) in ("builtins.isinstance", "builtins.callable")

    def _depends(self, checker: Linearity, expr: ast.expr, depth: int, leaves: frozenset = frozenset()) -> bool:
        """Whether `expr`'s value (not only its metadata) is computed from a tangent; `leaves`: the
        names an enclosing comprehension binds to a tangent's values."""
        if depth > 12:
            return False
        if isinstance(expr, COMPREHENSIONS):  # `all(jnp.all(jnp.isfinite(t)) for t in tree_leaves(tangents))`
            bound = comprehension_targets(self.model, expr, lambda e: self._depends(checker, e, depth + 1, leaves))
            return self._depends(checker, expr.elt, depth + 1, leaves | bound)
        if isinstance(expr, ast.Name):
            if expr.id in checker.tangents or expr.id == checker.param or expr.id in leaves:
                return True
            values = checker.values.get(expr.id) or []
            return any(v is not None and not isinstance(v, ast.Constant) and self._depends(checker, v, depth + 1)
                       for v in values)
        if isinstance(expr, ast.Attribute):
            return expr.attr not in STATIC_ATTRS and self._depends(checker, expr.value, depth + 1, leaves)
        if isinstance(expr, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in expr.ops):
            return False
        if isinstance(expr, ast.Call) and (_static_call(self.model.index.qualname(expr.func) or "")
                                           or self._static_helper(expr)):
            return False
        if isinstance(expr, (ast.Lambda, ast.FunctionDef)):
            return False
        return any(self._depends(checker, child, depth + 1, leaves) for child in ast.iter_child_nodes(expr)
                   if isinstance(child, ast.expr))


def _tests_of(node: ast.AST) -> Iterator[tuple]:
    """The expressions Python converts to bool at `node`, with how the message says it."""
    if isinstance(node, (ast.If, ast.While)):
        yield node.test, f"branches with `{'if' if isinstance(node, ast.If) else 'while'}` on"
    elif isinstance(node, ast.IfExp):
        yield node.test, "branches (`... if ... else ...`) on"
    elif isinstance(node, ast.Assert):
        yield node.test, "asserts"
    elif isinstance(node, ast.BoolOp):
        for value in node.values[:-1]:
            yield value, f"tests (`{'and' if isinstance(node.op, ast.And) else 'or'}`)"
    elif isinstance(node, ast.comprehension):
        for cond in node.ifs:
            yield cond, "filters a comprehension on"


def _static_call(q: str) -> bool:
    """A call whose result is a Python value whatever its arguments: `len(t)`, `np.shape(t)`."""
    if q in STATIC_CALLS:
        return True
    return q.startswith(METADATA_MODULES) and q.rsplit(".", 1)[-1] in METADATA_FUNCTIONS
