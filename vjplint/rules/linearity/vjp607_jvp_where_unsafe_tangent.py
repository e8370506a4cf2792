from __future__ import annotations

import ast
from typing import Iterator, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.linearity import Linearity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

SELECTS = frozenset({"jax.numpy.where", "jax.lax.select"})
# Coefficients that are infinite or NaN at a point their argument can reach (zero, or below it).
UNSAFE_CALLS = frozenset({"log", "log2", "log10", "rsqrt", "reciprocal", "arctanh"})
# Functions that are zero where their argument is (so a zero-prone argument stays zero-prone).
ZERO_AT_ZERO = frozenset({"sqrt", "cbrt", "abs", "square", "sin", "tan", "sinh", "tanh", "expm1", "log1p", "arcsin",
                          "arctan", "sign"})


class JvpWhereUnsafeTangent(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule whose tangent is selected by a single `jnp.where` (or
    `lax.select`) when a branch multiplies the tangent by a coefficient that can be infinite or
    NaN at the points the condition excludes: a division by, or a `log` of, a value the condition
    tests (`jnp.where(x > 0, t / x, 0.0)`, `jnp.where(x < 1, dx, dx / jnp.sqrt(x))`). A coefficient
    computed from a value made safe first (the "double where": `safe = jnp.where(x > 0, x, 1.0)`)
    is not reported.

    ## Why is this bad?
    `jax.jvp` is right: the selection drops the bad branch. But reverse mode transposes the tangent
    computation, and the transpose of a selection sends a zero cotangent into the other branch,
    where it is multiplied by the infinite coefficient: `0 * inf` is NaN, so `jax.grad` returns NaN
    at those points, silently (jax-ml/jax#5798; JAX's FAQ "gradients contain NaN where using
    where"). Measured in `docs/facts/scripts/hazard_jvp_where_nan.py`.

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), jnp.where(x > 0.0, t * (1.0 + jnp.log(x)), 0.0)
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        safe = jnp.where(x > 0.0, x, 1.0)        # the coefficient never sees the excluded points
        return f(x), jnp.where(x > 0.0, t * (1.0 + jnp.log(safe)), 0.0)
    ```

    ## Fix safety
    No automatic fix: the safe value to substitute depends on the function.
    """

    CODE = "VJP607"
    NAME = "jvp-where-unsafe-tangent"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def xlogx(x):
    return x * jnp.log(x)

@xlogx.defjvp
def xlogx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return xlogx(x), jnp.where(x > 0.0, t * (1.0 + jnp.log(x)), 0.0)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def xlogx(x):
    return x * jnp.log(x)

@xlogx.defjvp
def xlogx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    safe = jnp.where(x > 0.0, x, 1.0)
    return xlogx(x), jnp.where(x > 0.0, t * (1.0 + jnp.log(safe)), 0.0)
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
        checker = self.model.facts.linearity(fn, params[-1])
        name = rule.name or getattr(fn, "name", "<lambda>")
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call) or self.model.index.qualname(node.func) not in SELECTS:
                continue
            args = [a for a in node.args if not isinstance(a, ast.Starred)]
            if len(args) != 3 or not checker._tangent_free(args[0], 0):
                continue  # a condition on a tangent is VJP601's
            tested = {n.id for n in walk(args[0]) if isinstance(n, ast.Name)}
            for branch in args[1:]:
                found = self._unsafe(checker, branch, tested)
                if found is not None:
                    factor, value = found
                    self.report(factor, (
                        f"the jvp rule `{name}` of `{d.name}` selects its tangent with one "
                        f"`{self.quote(node.func, 20)}` on `{self.quote(args[0], 30)}`, and a branch multiplies the "
                        f"tangent by `{self.quote(factor, 40)}`, which may be infinite or NaN where the condition "
                        f"excludes `{value}`: `jax.jvp` is right, but `jax.grad` transposes the selection, sends a "
                        f"zero cotangent into that branch and gets `0 * inf` = NaN there, silently "
                        f"(jax-ml/jax#5798). Compute the coefficient from a safe value first (`safe = "
                        f"jnp.where(<condition>, {value}, <a harmless value>)`, the \"double where\")"))
                    break

    def _unsafe(self, checker: Linearity, branch: ast.expr, tested: Set[str]) -> Optional[Tuple[ast.expr, str]]:
        """A tangent-free coefficient of a tangent term in `branch` that divides by, or takes a log
        of, a name the condition tests."""
        if checker._tangent_free(branch, 0):
            return None
        for node in _terms(branch):
            if not isinstance(node, ast.BinOp):
                continue
            left_free, right_free = checker._tangent_free(node.left, 0), checker._tangent_free(node.right, 0)
            if isinstance(node.op, ast.Div) and not left_free and right_free:
                value = self._zero_prone(node.right, tested)
                if value is not None:
                    return node.right, value
            if isinstance(node.op, ast.Mult) and left_free != right_free:
                coefficient = node.left if left_free else node.right
                value = self._unsafe_call(coefficient, tested)
                if value is not None:
                    return coefficient, value
        return None

    def _unsafe_call(self, expr: ast.expr, tested: Set[str]) -> Optional[str]:
        for node in walk(expr):
            if isinstance(node, ast.Call):
                q = self.model.index.qualname(node.func) or ""
                if q.startswith(("jax.numpy.", "jax.lax.")) and q.rsplit(".", 1)[-1] in UNSAFE_CALLS and node.args:
                    value = self._zero_prone(node.args[0], tested)
                    if value is not None:
                        return value
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                value = self._zero_prone(node.right, tested)
                if value is not None:
                    return value
        return None

    def _zero_prone(self, expr: ast.expr, tested: Set[str], depth: int = 0) -> Optional[str]:
        """The tested name when `expr` is zero wherever it is (`x`, `2 * jnp.sqrt(x)`, `x ** 2`);
        None for a value made safe or shifted (`jnp.maximum(x, 1.0)`, `x + eps`: not claimed)."""
        if depth > 8:
            return None
        if isinstance(expr, ast.Name):
            return expr.id if expr.id in tested else None
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            return self._zero_prone(expr.operand, tested, depth + 1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
            return (self._zero_prone(expr.left, tested, depth + 1)
                    or self._zero_prone(expr.right, tested, depth + 1))
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, ast.Pow)):
            return self._zero_prone(expr.left, tested, depth + 1)
        if isinstance(expr, ast.Call) and len(expr.args) == 1:
            q = self.model.index.qualname(expr.func) or ""
            if q.startswith(("jax.numpy.", "jax.lax.")) and q.rsplit(".", 1)[-1] in ZERO_AT_ZERO:
                return self._zero_prone(expr.args[0], tested, depth + 1)
        return None


def _terms(expr: ast.expr) -> Iterator[ast.expr]:
    """`expr` and its subexpressions, not entering nested functions."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Lambda, ast.FunctionDef)):
            continue
        yield node  # type: ignore[misc]
        stack.extend(ast.iter_child_nodes(node))  # type: ignore[arg-type]

