from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Applicability, NoneTangentRule, Severity
from vjplint.facts import Arity, plural
from vjplint.model.file_model import RuleFunction
from vjplint.plans.safety import rewrite_draws
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

    `f.defjvps(rule_0, rule_1, ...)` takes one tangent function (or `None`) per positional
    parameter of the primal; JAX pairs them one to one. Measured on JAX 0.10.2
    (docs/facts/structure.md): one rule for a two-argument function makes `grad`, `jit(grad)`
    and `jvp` raise `ValueError: safe_zip() argument 1 has length 1 but argument 0 has length 2`,
    whichever argument is differentiated. Each tangent function is called `fn(g, ans, *primals)`
    (the tangent, the primal output, then every primal): one without `ans` raises `TypeError:
    <lambda>() takes 3 positional arguments but 4 were given`.

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
    No automatic fix for a rule's parameters: which one is missing or extra needs a human. For
    `defjvps` with fewer functions than parameters, an unsafe fix adds `None` for the trailing
    parameters (JAX then treats their derivative as zero, which the author must confirm), when
    VJP609 would not read those `None`s as a used input's derivative left silently zero (where
    differentiating raised before); otherwise no fix is offered.
    """

    CODE = "VJP312"
    NAME = "jvp-rule-arity"
    SEVERITY = Severity.ERROR
    FIX = "add None for the parameters defjvps leaves out"
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
        self._check_defjvps_counts()
        reported = set()
        for d in self.model.derivatives:
            nondiff = self.model.facts.nondiff_positions(d)
            if nondiff is None or d.signature is None:
                continue
            for reg, rule in self.model.facts.jvp_rules(d):
                arity = self.model.facts.decorated_rule_arity(rule) if reg.as_decorator else self.model.facts.rule_arity(rule)
                if arity is None or rule.node is None or rule.node in reported:
                    continue
                problem = self._problem(rule, arity, len(nondiff) + 2, keywords_passed=d.api == "equinox")
                if problem is None:
                    continue
                reported.add(rule.node)
                names = [*(d.signature.positional[i] for i in nondiff if i < len(d.signature.positional)),
                         "primals", "tangents"]
                nondiff_note = " (the nondiff values first, in index order)" if nondiff else ""
                self.report(rule.expr if isinstance(rule.expr, ast.Call) else self.model.name_anchor(rule.node),
                            f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` {problem}, but "
                            f"{self.model.facts.caller(d)} calls it "
                            f"with {plural(len(names), 'positional argument')} ({', '.join(names)}){nondiff_note}, "
                            f"so differentiating `{d.name}` (jvp, grad, jacfwd) raises `"
                            f"{self._error(rule, arity, len(names))}`; give it the parameters ({', '.join(names)})")

    def _check_defjvps_counts(self) -> None:
        """`f.defjvps(...)` with another number of tangent functions than `f` has parameters."""
        for d in self.model.derivatives:
            sig = d.signature
            if d.api != "jax" or d.kind != "jvp" or d.nondiff or d.nondiff_unresolved or sig is None or sig.vararg:
                continue  # nondiff with defjvps is VJP314's
            for reg in self.model.facts.own_registrations(d):
                call = reg.node
                if reg.method != "defjvps" or reg.as_decorator or not isinstance(call, ast.Call) or call.keywords \
                        or any(isinstance(a, ast.Starred) for a in call.args) or not self.model.facts.registered_here(d, call):
                    continue
                given, wanted = len(call.args), len(sig.positional)
                self._defjvps_arities(d, reg, wanted)
                if given == wanted or given == 0:
                    continue
                fix = None
                if given < wanted:
                    missing = ", ".join(["None"] * (wanted - given))
                    fix = self.replacing(call.args[-1], f"{self.model.source_text(call.args[-1])}, {missing}",
                                         Applicability.UNSAFE, f"Add `None` for {', '.join(f'`{p}`' for p in sig.positional[given:])} "
                                         f"(no tangent rule: a zero derivative)")
                    if rewrite_draws(self.model, fix.edits[:1], "VJP609",
                                     lambda e: isinstance(e, NoneTangentRule) and e.function == d.name,
                                     self.options.relint):
                        fix = None  # a `None` for an input the output uses, which a call differentiates
                self.report(call, fix=fix, message=f"`{d.name}.defjvps(...)` gives {plural(given, 'tangent function')} but `{d.name}` "
                                  f"has {plural(wanted, 'positional parameter')} ({', '.join(sig.positional)}): JAX "
                                  f"pairs them one to one, so differentiating `{d.name}` (jvp, grad, jacfwd) raises "
                                  f"`ValueError: safe_zip() argument 1 has length {given} but argument 0 has length "
                                  f"{wanted}`; pass one function per parameter, `None` for a parameter without a "
                                  f"tangent rule")

    def _defjvps_arities(self, d, reg, params: int) -> None:
        """Each tangent function of `f.defjvps(...)` is called `fn(t, ans, *primals)`: `params + 2` arguments."""
        names = ["g", "ans", *d.signature.positional]
        for rule in reg.rules:
            arity = self.model.facts.rule_arity(rule) if rule.node is not None else None
            problem = self._problem(rule, arity, params + 2) if arity is not None else None
            if problem is not None:
                self.report(rule.expr, f"{rule_label(rule, 'tangent function')} given to `{d.name}.defjvps(...)` "
                                       f"{problem}, but JAX calls each with {plural(params + 2, 'positional argument')} "
                                       f"(the tangent, the primal output `ans`, then {', '.join(names[2:])}), so "
                                       f"differentiating `{d.name}` (jvp, grad, jacfwd) raises "
                                       f"`{self._error(rule, arity, params + 2)}`; give it the parameters "
                                       f"({', '.join(names)})")

    @staticmethod
    def _problem(rule: RuleFunction, arity: Arity, given: int, keywords_passed: bool = False) -> Optional[str]:
        """`keywords_passed`: equinox passes the primal's keywords on, so keyword-only parameters may be filled."""
        assert rule.node is not None
        sig = rule.signature
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
        label = getattr(rule.called, "name", "<lambda>")
        assert rule.node is not None
        sig = rule.signature
        missing = [n for n in sig.kwonly if n not in sig.defaults and n not in rule.bound_keywords]
        if missing and arity.accepts(given):
            return f"TypeError: {label}() missing 1 required keyword-only argument: '{missing[0]}'"
        return python_arity_error(label, arity, given)
