from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.jaxapi import ARRAY_METHODS
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode
from vjplint.rules.wrong_values._jvp_primal_flow import NAMESPACES, SAME_VALUE, CleanedComparison, PrimalFlow


class JvpPrimalOutNotValue(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule whose primal output (the first element it returns) is not the
    function's value: it is computed from the tangents (error), or from a "cleaned" input
    (`jnp.maximum(x, eps)`, `jnp.clip(x, ...)`, `jnp.where(...)`, ...) where the primal uses the
    input itself (warning: the two may agree on the inputs you call it with), or is one of the
    rule's primal inputs returned unchanged while the primal computes something else from it
    (a straight-through estimator written as `return x, t` for `round(x)`).

    ## Why is this bad?
    Under any transformation that runs the rule (`grad`, `jvp`, `jacfwd`, ...) the rule's primal
    output replaces the function's value. Measured on JAX 0.10.2
    (`docs/facts/scripts/hazard_families.py`, section B, `f = log`): a primal output computed
    from the tangent makes `jax.jvp` return a wrong value silently and `grad`, `value_and_grad`
    raise `ValueError: Linearization failed to produce known values for all output primals`,
    `jacfwd` `ValueError: at vmap out_axes[0], got axis spec None but output was batched`
    (jax-ml/jax#7972). A primal output at a cleaned input (`log(maximum(x, 1))`) is silently
    wrong under `jvp` and `value_and_grad`, and everything downstream is differentiated at the
    wrong value (`grad(lambda v: f(v) ** 2)` is 0 instead of -2.77), while eager calls of `f`
    are right; the custom_vjp analogue is lucidrains/flash-attention-jax#7. The raw input as
    the primal output (flaport/inverse_design#13, `docs/facts/scripts/hazard_heldout_two.py`)
    is the same silent error: `jax.jvp` and `value_and_grad` return the input instead of
    `round(x)`, and `grad` of a loss built on the function is computed at the input. A primal
    that returns its input (a gradient-only custom_jvp) is left alone.

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        x_safe = jnp.maximum(x, 1e-6)
        return jnp.log(x_safe), t / x_safe
    ```

    ## Use instead
    ```python
        return f(x), t / x_safe      # the primal output is the function's value
    ```

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP603"
    NAME = "jvp-primal-out-not-value"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.log(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.log(x) + t, t / x
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.log(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out, out_dot = jax.jvp(jnp.log, (x,), (t,))
    return out, t / jnp.maximum(x, 1e-6)
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        rule = d.rule("jvp")
        if rule is None or rule.node is None or rule.node in self._done:
            return
        self._done.add(rule.node)
        self._check_rule(d, rule, rule.node)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, fn: FunctionNode) -> None:
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][rule.bound_positional:]
        if len(params) < 2 or fn.args.vararg is not None:
            return
        flow = PrimalFlow(self.model, fn, params[-2], params[-1])
        name = rule.name or getattr(fn, "name", "<lambda>")
        for ret in self.model.facts.returns_of(fn):
            value = ret.value
            if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
                continue
            out = value.elts[0]
            via = flow.tangent_use(out)
            if via is not None:
                self.report(out, (
                    f"the jvp rule `{name}` of `{d.name}` computes its primal output `{self.quote(out, 40)}` from the "
                    f"tangents ({via}): that output replaces the function's value under every transformation, so "
                    f"`jax.jvp` returns a wrong value silently, and `jax.grad` raises ValueError: Linearization "
                    f"failed to produce known values for all output primals (jax.jacfwd: a vmap out_axes error; "
                    f"jax-ml/jax#7972). Compute the primal output from the primals only, e.g. `{d.name}(...)` on them"))
                continue
            cleaned = self._cleaned(d, flow, out)
            if cleaned is not None:
                self.report(out, (
                    f"the jvp rule `{name}` of `{d.name}` returns `{self.quote(out, 40)}` as the primal output, computed "
                    f"from `{self.quote(cleaned, 40)}` where the primal uses the input itself: under grad, jvp and "
                    f"value_and_grad this value replaces the function's, so where they differ the result and every "
                    f"gradient downstream may be silently wrong while eager calls are right (the custom_vjp analogue: "
                    f"lucidrains/flash-attention-jax#7). Return the function's value (`{d.name}(...)` on the primals, "
                    f"or the primal's expression) and keep the cleaned input for the tangent"))
                continue
            computed = self._raw_input(d, flow, fn, out)
            if computed is not None:
                self.report(out, (
                    f"the jvp rule `{name}` of `{d.name}` returns its input `{self.quote(out, 30)}` unchanged as the "
                    f"primal output, but the primal returns `{self.quote(computed, 40)}`: under jvp, grad and "
                    f"value_and_grad the rule's primal output replaces the function's value, so they see the raw input "
                    f"while eager calls are right, and every gradient downstream is computed at the wrong value "
                    f"(measured on JAX 0.10.2). Return the function's value (`{d.name}(...)` on the primals); a "
                    f"straight-through estimator changes only the tangent"))

    def _raw_input(self, d: CustomDerivative, flow: "PrimalFlow", fn: FunctionNode, out: ast.expr) -> Optional[ast.expr]:
        """What the primal returns, when the rule's primal output is one of its primal inputs as
        received while no return of the primal is that input (or a copy, cast or reshape of it)."""
        primal = d.primal
        index = flow.primal_of(out)
        if primal is None or index is None:
            return None
        if isinstance(out, ast.Name) and len(self._bindings(fn, out.id)) != 1:
            return None  # rebound in the rule: no longer the input
        params = [a.arg for a in (*primal.args.posonlyargs, *primal.args.args)]
        diff = [p for i, p in enumerate(params) if i not in d.nondiff]
        if d.nondiff_unresolved or primal.args.vararg is not None or index >= len(diff):
            return None
        returns = [r.value for r in self.model.facts.returns_of(primal)]
        if not returns or any(v is None or self._passes_through(primal, v, diff[index], 0) for v in returns):
            return None
        return returns[0]

    def _passes_through(self, primal: FunctionNode, expr: ast.expr, param: str, depth: int) -> bool:
        """`expr` may be the parameter's value: the name itself, a copy, cast or reshape of it, a
        name bound to one of those, or anything not known to compute (a call of another function)."""
        if depth > 4:
            return True
        if isinstance(expr, ast.Name):
            if expr.id == param:
                return True
            bindings = self._bindings(primal, expr.id)
            if not bindings:
                return False  # a global or constant: not the input
            return any(b.kind != "assign" or b.value is None or self._passes_through(primal, b.value, param, depth + 1)
                       for b in bindings)
        if isinstance(expr, ast.Call):
            q = self.model.index.qualname(expr.func) or ""
            if isinstance(expr.func, ast.Attribute) and not q:  # a method: `x.astype(...)`
                return expr.func.attr not in ARRAY_METHODS or (
                    expr.func.attr in SAME_VALUE and self._passes_through(primal, expr.func.value, param, depth + 1))
            if q.rsplit(".", 1)[-1] in SAME_VALUE and expr.args:
                return self._passes_through(primal, expr.args[0], param, depth + 1)
            return not q.startswith((*NAMESPACES, "numpy.", "jax.numpy."))  # another function: unknown
        return not isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Compare, ast.BoolOp))

    def _bindings(self, fn: FunctionNode, name: str) -> list:
        scope = self.model.index.scopes.get(fn)
        return list(scope.bindings.get(name, [])) if scope is not None else []

    def _cleaned(self, d: CustomDerivative, flow: "PrimalFlow", out: ast.expr) -> Optional[ast.expr]:
        """The cleaning call in the rule's primal output that the primal does not make, if any."""
        primal = d.primal
        if primal is None:
            return None
        primal_params = [a.arg for a in (*primal.args.posonlyargs, *primal.args.args)]
        primal_name = getattr(primal, "name", d.name)  # `jax.custom_jvp(lambda x: ...)` has no name of its own
        if isinstance(out, ast.Call) and isinstance(out.func, ast.Name) and out.func.id in (d.name, primal_name):
            for arg in out.args:  # `f(x_safe)`: the function at another point
                cleaned = flow.cleaned_primal(arg)
                if cleaned is not None and not self._primal_cleans(primal, cleaned):
                    return cleaned
            return None
        returns = [r.value for r in self.model.facts.returns_of(primal) if r.value is not None]
        if len(returns) != 1:
            return None
        return CleanedComparison(flow, primal_params, d.nondiff).same_but_cleaned(returns[0], out)

    def _primal_cleans(self, primal: FunctionNode, cleaned: ast.expr) -> bool:
        q = self.model.index.qualname(cleaned.func) if isinstance(cleaned, ast.Call) else None  # type: ignore
        for node in self.model.facts.own_nodes(primal):
            if isinstance(node, ast.Call) and self.model.index.qualname(node.func) == q:
                return True
        return False
