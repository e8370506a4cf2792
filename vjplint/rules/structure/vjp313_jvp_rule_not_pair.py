from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.facts import plural
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode


class JvpRuleNotPair(Rule):
    """## What it does
    Flags a `return` of a `jax.custom_jvp` rule that is provably not a pair: a bare array
    expression (`jnp.cos(x) * t`), a constant or `None`, or a tuple/list literal whose length is
    not 2.

    ## Why is this bad?
    JAX requires the rule to return `(primal_out, tangent_out)`. Anything else fails when the
    function is differentiated (`jax.jvp`, `jax.grad`, `jacfwd`), never in eager calls:

        TypeError: Custom JVP rule f_jvp for function f must produce a pair (list or tuple of
        length two) representing primal and tangent outputs, but got [0.84 0.91].

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.cos(x) * t
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), jnp.cos(x) * t
    ```

    ## Fix safety
    No automatic fix: the missing primal output has to be written.
    """

    CODE = "VJP313"
    NAME = "jvp-rule-not-pair"
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
    return jnp.cos(x) * t
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = jnp.sin(x), jnp.cos(x) * t
    return out
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for _, rule in self.model.facts.jvp_rules(d):
            fn = rule.called  # what JAX calls and names (a helper it returns through is followed)
            if fn is None or fn in self._done:
                continue
            self._done.add(fn)
            for node, value in self.model.facts.returns_of(fn):
                why = self._why(value, fn)
                if why is not None:
                    self._report(d, rule, node, value, why)

    def _why(self, value: Optional[ast.expr], fn: FunctionNode) -> Optional[str]:
        """What the returned value provably is, when that is not a pair."""
        if value is not None:
            length = self.model.facts.sequence_length(value, fn)
            if length is not None:
                count, exact, literal = length
                if not exact or count == 2:
                    return None
                kind = "list" if isinstance(literal, ast.List) else "tuple"
                where = "" if literal is value else f" (assigned at line {literal.lineno})"
                return f"a {kind} of {plural(count, 'element')}{where}"
            inferred = self.model.facts.values().of(value)  # a helper's tuple, a name bound to one
            if inferred.tag in ("tuple", "list") and inferred.items is not None and len(inferred.items) != 2 \
                    and not isinstance(value, (ast.Tuple, ast.List)):
                return f"a {inferred.tag} of {plural(len(inferred.items), 'element')} ({inferred.why})"
        return self.model.facts.not_a_sequence(value, fn)

    def _report(self, d: CustomDerivative, rule: RuleFunction, node: ast.AST, value: Optional[ast.expr],
                why: str) -> None:
        primal = d.name
        shown = self.quote(value, 50) if value is not None else "return"
        plain = not (rule.bound_positional or rule.bound_keywords)
        jax_name = getattr(rule.called, "name", "<lambda>") if plain else "..."
        if d.api == "equinox":  # equinox unpacks the rule's result itself
            error = ("an unpacking error (`ValueError: too many values to unpack (expected 2)` when it returns only "
                     "the tangent)")
        else:
            error = (f"TypeError \"Custom JVP rule {jax_name} for function {primal} must produce a pair (list or tuple "
                     f"of length two) representing primal and tangent outputs\"")
        self.report(node, f"{rule_label(rule, 'jvp rule')} of {d.label} `{primal}` returns `{shown}`, which is {why}, "
                          f"not a pair: differentiating `{primal}` (jvp, grad, jacfwd) raises {error}. Return "
                          f"`(primal_out, tangent_out)`")
