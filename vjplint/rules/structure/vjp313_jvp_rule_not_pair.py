from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.facts import plural
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._jvp_unpacking import rule_unpacking
from vjplint.rules.structure._primal_like import primal_like
from vjplint.model.semantic import FunctionNode


class JvpRuleNotPair(Rule):
    """## What it does
    Flags a `return` of a `jax.custom_jvp` rule that is provably not a pair: a bare array
    expression (`jnp.cos(x) * t`), a constant or `None`, or a tuple/list literal whose length is
    not 2; an input's tangent alone (`t_x, _ = tangents; return t_x`) or the tangent half of
    `jax.jvp`; a result made as the primal makes its output (the same function, the same layout of
    arguments: it has the primal output's structure, which a pair of it and its tangent never has).
    A helper the rule only returns through (`return _impl(primals, tangents)`) is read too.

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
            # what JAX calls and names, then the helper it only returns through (`return _impl(p, t)`)
            for fn in dict.fromkeys(f for f in (rule.called, rule.node) if f is not None):
                if fn in self._done:
                    break  # judged already (a helper several rules share)
                self._done.add(fn)
                tangents = self._tangents(d, rule, fn)
                found = [(node, value, why) for node, value in self.model.facts.returns_of(fn)
                         for why in [self._why(value, fn, tangents) or self._primal_like(d, value, fn)] if why]
                for node, value, why in found:
                    self._report(d, rule, node, value, why, fn)
                if found:
                    break  # the registered function's return is the finding; its helper's says it again

    def _tangents(self, d: CustomDerivative, rule: RuleFunction, fn: FunctionNode) -> Dict[str, str]:
        """Names of `fn` holding a tangent alone, with what they are: the rule's unpacked tangents
        (`x_dot, _ = tangents`) and the tangent half of `jax.jvp` (`_, t = jax.jvp(...)`)."""
        found: Dict[str, str] = {}
        unpacked = rule_unpacking(d, rule) if fn is rule.node and rule.signature is not None else None
        if unpacked is not None:
            primals, tangents, _ = unpacked
            for primal, tangent in zip(primals, tangents):
                if tangent:
                    found[tangent] = f"the tangent of `{primal}`" if primal else "an input's tangent"
        scope = self.model.index.scopes.get(fn)
        for node in self.model.facts.own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call) \
                    and self.model.index.qualname(node.value.func) == "jax.jvp":
                target = node.targets[0]
                if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
                    found[target.elts[1].id] = f"the tangent half of `{self.quote(node.value, 30)}`"
        return {name: why for name, why in found.items()
                if scope is not None and len(scope.bindings.get(name, [])) == 1}

    def _primal_like(self, d: CustomDerivative, value: Optional[ast.expr], fn: FunctionNode) -> Optional[str]:
        """A value with the primal output's structure, which `(primal_out, tangent_out)` never has."""
        why = primal_like(self.model, d, value)
        return None if why is None else f"{why}, so it has the primal output's structure, never a pair of it and its tangent"

    def _why(self, value: Optional[ast.expr], fn: FunctionNode, tangents: Dict[str, str]) -> Optional[str]:
        """What the returned value provably is, when that is not a pair."""
        if isinstance(value, ast.Name) and value.id in tangents:
            return f"{tangents[value.id]} alone, without the primal output"
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
        return self.model.facts.not_a_sequence(value, fn, frozenset(tangents))  # a tangent in arithmetic: an array

    def _report(self, d: CustomDerivative, rule: RuleFunction, node: ast.AST, value: Optional[ast.expr],
                why: str, fn: FunctionNode) -> None:
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
        through = f" (through `{fn.name}`)" if fn is not rule.called and isinstance(fn, ast.FunctionDef) else ""
        self.report(node, f"{rule_label(rule, 'jvp rule')} of {d.label} `{primal}`{through} returns `{shown}`, which is {why}, "
                          f"not a pair: differentiating `{primal}` (jvp, grad, jacfwd) raises {error}. Return "
                          f"`(primal_out, tangent_out)`")
