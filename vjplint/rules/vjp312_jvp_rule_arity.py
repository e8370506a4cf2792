from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.facts import Arity, plural
from vjplint.model import RuleFunction, Signature
from vjplint.rules.base import Rule
from vjplint.rules.helpers import python_arity_error, rule_label


class JvpRuleArity(Rule):
    """## What it does
    Checks that a `jax.custom_jvp` rule (registered with `f.defjvp(rule)` or `@f.defjvp`)
    accepts exactly `len(nondiff_argnums) + 2` positional arguments: the nondiff values in
    index order, then the tuple of primals, then the tuple of tangents. Defaults, `*args` and
    arguments bound with `functools.partial` are taken into account.

    ## Why is this bad?
    JAX calls the rule as `rule(*nondiff_values, primals, tangents)` the first time the
    function is differentiated (`jax.jvp`, `jax.grad`, `jacfwd`, ...). A rule with another
    arity fails there, with a plain Python error far from its definition:

        TypeError: f_jvp() takes 2 positional arguments but 3 were given

    Eager calls, `jit` and `vmap` never run the rule, so the bug hides until differentiation.

    ## Example
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def f(n, x):
        return x ** n

    @f.defjvp
    def f_jvp(primals, tangents):
        ...
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return f(n, x), n * x ** (n - 1) * t
    ```

    ## Fix safety
    No automatic fix: which parameter is missing or extra needs a human.
    """

    CODE = "VJP312"
    NAME = "jvp-rule-arity"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals):
    (x,) = primals
    return jnp.sin(x), jnp.cos(x)
''']
    VALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def f(n, x):
    return x ** n

@f.defjvp
def f_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return f(n, x), n * x ** (n - 1) * t
''']

    def check(self) -> None:
        reported = set()
        for d in self.model.derivatives:
            nondiff = self.model.facts.nondiff_positions(d)
            if nondiff is None or d.signature is None:
                continue
            for reg, rule in self.model.facts.jvp_rules(d):
                arity = self.model.facts.decorated_rule_arity(rule) if reg.as_decorator else self.model.facts.rule_arity(rule)
                if arity is None or rule.node is None or id(rule.node) in reported:
                    continue
                problem = self._problem(rule, arity, len(nondiff) + 2, keywords_passed=d.api == "equinox")
                if problem is None:
                    continue
                reported.add(id(rule.node))
                names = [*(d.signature.positional[i] for i in nondiff if i < len(d.signature.positional)),
                         "primals", "tangents"]
                nondiff_note = " (the nondiff values first, in index order)" if nondiff else ""
                self.report(rule.expr if isinstance(rule.expr, ast.Call) else self.model.name_anchor(rule.node),
                            f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` {problem}, but "
                            f"{self.model.facts.caller(d)} calls it "
                            f"with {plural(len(names), 'positional argument')} ({', '.join(names)}){nondiff_note}, "
                            f"so differentiating `{d.name}` (jvp, grad, jacfwd) raises `"
                            f"{self._error(rule, arity, len(names))}`; give it the parameters ({', '.join(names)})")

    @staticmethod
    def _problem(rule: RuleFunction, arity: Arity, given: int, keywords_passed: bool = False) -> Optional[str]:
        """`keywords_passed`: equinox passes the primal's keywords on, so keyword-only parameters may be filled."""
        assert rule.node is not None
        sig = Signature.of(rule.node)
        missing = [] if keywords_passed else [n for n in sig.kwonly if n not in sig.defaults
                                              and n not in rule.bound_keywords]
        if missing:
            return f"has the required keyword-only parameter `{missing[0]}`"
        if arity.accepts(given):
            return None
        bound = f" after binding {plural(arity.bound, 'leading argument')}" if arity.bound else ""
        return f"takes {arity.count_text()} {arity.params_text()}{bound}"

    @staticmethod
    def _error(rule: RuleFunction, arity: Arity, given: int) -> str:
        label = getattr(rule.node, "name", "<lambda>")
        assert rule.node is not None
        sig = Signature.of(rule.node)
        missing = [n for n in sig.kwonly if n not in sig.defaults and n not in rule.bound_keywords]
        if missing and arity.accepts(given):
            return f"TypeError: {label}() missing 1 required keyword-only argument: '{missing[0]}'"
        return python_arity_error(label, arity, given)
