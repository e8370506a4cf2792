from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, Registration, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import constant_value

ZERO_FROM_PRIMAL = "jax.custom_derivatives.zero_from_primal"
SYMBOLIC_ZERO = "jax.custom_derivatives.SymbolicZero"


class JvpSymbolicZeroUnflagged(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule registered without `symbolic_zeros=True` (`@f.defjvp`, or
    `f.defjvp(rule)`) whose tangent output is a symbolic zero: `zero_from_primal(x,
    symbolic_zeros=True)` or a `jax.custom_derivatives.SymbolicZero(...)`, returned directly or
    through a name.

    ## Why is this bad?
    Without `symbolic_zeros=True` on the registration, `jax.jvp` and `jax.jacfwd` work (JAX's
    own tests cover that path since jax-ml/jax#28150), but reverse mode transposes the tangent and
    `jax.grad` raises `TypeError: Argument 'SymbolicZero' of type '<class
    'jax._src.ad_util.SymbolicZero'>' is not a valid JAX type` (measured on JAX 0.10.2,
    jax-ml/jax#28144). `zero_from_primal(x)` (the default `symbolic_zeros=False`) returns real
    zeros and works everywhere; so does the same rule registered with `symbolic_zeros=True`
    (`docs/facts/scripts/hazard_symbolic_zero_jvp.py`). A warning: code that only ever pushes
    tangents forward through the function is fine.

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), _ = primals, tangents
        return f(x), zero_from_primal(x, symbolic_zeros=True)
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), _ = primals, tangents
        return f(x), jnp.zeros_like(x)
    ```
    or register the rule with `f.defjvp(f_jvp, symbolic_zeros=True)` (the rule then receives
    `SymbolicZero` tangents for inputs that are not differentiated, and must handle them).

    ## Fix safety
    No automatic fix: dropping the symbolic zero or adding the flag (which changes what the rule
    receives) is for the author to decide.
    """

    CODE = "VJP325"
    NAME = "jvp-symbolic-zero-unflagged"
    SEVERITY = Severity.WARNING  # forward mode works: only reverse mode of the function fails
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})
    INVALID = ['''
import jax
from jax.custom_derivatives import zero_from_primal

@jax.custom_jvp
def f(x):
    return x + 1.0

@f.defjvp
def f_jvp(primals, tangents):
    (x,), _ = primals, tangents
    return f(x), zero_from_primal(x, symbolic_zeros=True)
''']
    VALID = ['''
import jax
from jax.custom_derivatives import zero_from_primal

@jax.custom_jvp
def f(x):
    return x + 1.0

def f_jvp(primals, tangents):
    (x,), _ = primals, tangents
    return f(x), zero_from_primal(x, symbolic_zeros=True)

f.defjvp(f_jvp, symbolic_zeros=True)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg in d.registrations:
            if reg.method != "defjvp" or not reg.rules or self._flagged(reg) is not False:
                continue
            rule = reg.rules[0]
            if rule.node is None or rule.node in self._seen:
                continue
            self._seen.add(rule.node)
            self._check_rule(d, rule)

    def _flagged(self, reg: Registration) -> Optional[bool]:
        """Whether the registration passes `symbolic_zeros=True` (the call form, or
        `@partial(f.defjvp, symbolic_zeros=True)`); None when it cannot be told."""
        return self.model.facts.defjvp_symbolic_zeros(reg)[0]

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction) -> None:
        fn = rule.node
        assert fn is not None
        assigned: Dict[str, ast.expr] = {}
        for node in self.model.facts.own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                assigned[name] = node.value if name not in assigned else ast.Constant(None)  # rebound: unknown
        for ret in self.model.facts.returns_of(fn):
            value = ret.value
            if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
                continue
            tangent = value.elts[1]
            zero = self._symbolic_zero(tangent, assigned)
            if zero is None:
                continue
            self.report(zero, (
                f"{rule_label(rule, 'jvp rule')} of `{d.name}` returns a symbolic zero tangent "
                f"(`{self.quote(zero, 50)}`), but it is registered without `symbolic_zeros=True`: `jax.jvp` "
                f"and `jax.jacfwd` work, but `jax.grad` of `{d.name}` raises TypeError: "
                f"Argument 'SymbolicZero' ... is not a valid JAX type (jax-ml/jax#28144). Return real zeros "
                f"(`jnp.zeros_like(...)`, or `zero_from_primal(x)` without the flag), or register the rule with "
                f"`symbolic_zeros=True`"))
            return

    def _symbolic_zero(self, expr: ast.expr, assigned: Dict[str, ast.expr]) -> Optional[ast.Call]:
        if isinstance(expr, ast.Name) and expr.id in assigned:
            expr = assigned[expr.id]
        if not isinstance(expr, ast.Call):
            return None
        q = self.model.index.qualname(expr.func)
        if q == SYMBOLIC_ZERO:
            return expr
        if q != ZERO_FROM_PRIMAL:
            return None
        flag = next((k.value for k in expr.keywords if k.arg == "symbolic_zeros"), None)
        if flag is None and len(expr.args) > 1:
            flag = expr.args[1]
        if flag is None:
            return None
        value = flag.value if isinstance(flag, ast.Constant) else constant_value(self.model.index, flag)
        return expr if value is True else None
