from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.facts.contract import NONE, Struct, primal_output, rule_environment, structure, through_wrapper
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label


class JvpTangentStructure(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule whose tangent output has another container structure than the
    primal output: a `defjvp` rule returning `(primal_out, (tangent,))` for a function whose output
    is one array, a tuple tangent of another length, a list for a tuple; and a `defjvps` rule
    returning a tuple where the output is one array. Structures are read through names bound once,
    helpers, calls of the function itself and arithmetic on arrays (`vjplint/facts/contract.py`).

    ## Why is this bad?
    JAX requires the tangent to have exactly the primal output's pytree structure. Anything else
    fails whenever the function is differentiated (`jax.jvp`, `jax.grad`, `jacfwd`), never in an
    eager call:

        TypeError: Custom JVP rule f_jvp for function f must produce primal and tangent outputs
        with equal container (pytree) structures, but got PyTreeDef(*) and PyTreeDef((*,)).

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), (jnp.cos(x) * t,)
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), jnp.cos(x) * t
    ```

    ## Fix safety
    No automatic fix: which structure was meant is the author's call.
    """

    CODE = "VJP333"
    NAME = "jvp-tangent-structure"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), (jnp.cos(x) * t,)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x), jnp.cos(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return (jnp.sin(x), jnp.cos(x)), (jnp.cos(x) * t, -jnp.sin(x) * t)
''']

    def check(self) -> None:
        self._done: Set[int] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.kind != "jvp" or d.api != "jax":
            return
        for reg in d.registrations:
            for rule in reg.rules:
                fn = rule.node
                if fn is None or rule.is_none or id(fn) in self._done:
                    continue
                self._done.add(id(fn))
                if reg.method == "defjvp":
                    self._check_defjvp(d, rule)
                elif reg.method == "defjvps":
                    self._check_defjvps(d, rule, reg.rules.index(rule))

    def _check_defjvp(self, d: CustomDerivative, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = through_wrapper(self.model, rule.node)  # a rule that only returns `_impl(primals, tangents)`
        for _, value in self.model.facts.returns_of(fn):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2 or \
                    any(isinstance(e, ast.Starred) for e in value.elts):
                continue
            primal_expr, tangent_expr = value.elts
            tangent = structure(self.model, d, tangent_expr, fn, {})
            if tangent is None or tangent.kind == NONE:
                continue
            primal = structure(self.model, d, primal_expr, fn, {})
            where = f"its primal output `{self.quote(primal_expr, 40)}`"
            if primal is None or primal.kind == NONE:
                primal, where = primal_output(self.model, d), "the function's output"
            if primal is None or primal.kind == NONE or primal.same_as(tangent):
                continue
            self._report(d, rule, tangent_expr, tangent, primal, where)

    def _check_defjvps(self, d: CustomDerivative, rule: RuleFunction, index: int) -> None:
        assert rule.node is not None
        fn = through_wrapper(self.model, rule.node)
        primal = primal_output(self.model, d)
        if primal is None or primal.kind == NONE:
            return
        env = rule_environment(self.model, d, fn, "defjvps", rule.bound_positional)
        for node, value in self.model.facts.returns_of(fn):
            tangent = structure(self.model, d, value, fn, env)
            if tangent is None or tangent.kind == NONE or primal.same_as(tangent):
                continue
            self._report(d, rule, value if value is not None else node, tangent, primal, "the function's output",
                         f"defjvps rule {index}")

    def _report(self, d: CustomDerivative, rule: RuleFunction, node: ast.AST, tangent: Struct, primal: Struct,
                where: str, label: str = "") -> None:
        # defjvps wraps its rules into one rule named `jvp`, for a function JAX names by the primal
        jax_name = "jvp" if label else getattr(rule.called, "name", "<lambda>")
        evidence = f" ({primal.why})" if primal.why and primal.why != "a literal" else ""
        shown = self.quote(node, 50) if isinstance(node, ast.expr) else "the return"
        self.report(node, f"{label or rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the tangent `{shown}`, "
                          f"{tangent.describe()}, but {where} is {primal.describe()}{evidence}: JAX requires the "
                          f"tangent to have the primal output's structure, so differentiating `{d.name}` (jvp, grad, "
                          f"jacfwd) raises TypeError \"Custom JVP rule {jax_name} for function {d.name} must produce "
                          f"primal and tangent outputs with equal container (pytree) structures\". Return a tangent "
                          f"shaped like the output ({primal.describe()})")
