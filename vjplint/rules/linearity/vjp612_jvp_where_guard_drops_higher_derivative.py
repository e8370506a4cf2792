from __future__ import annotations

import re

from vjplint.diagnostics import Severity
from vjplint.rules.linearity._where_guards import DroppedSlope, dropped_slopes
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label


class JvpWhereGuardDropsHigherDerivative(Rule):
    """## What it does
    Finds a `jnp.where(x == c, CONST, EXPR)` (or `lax.select`, or `x != c` with the branches
    swapped) in a custom_jvp rule or a custom_vjp bwd, where `CONST` is a number and `EXPR` is a
    small elementwise expression, and evaluates `EXPR` in plain Python (no JAX) on both sides of
    `x == c` (names the rule derives from `x`, such as `safe = jnp.where(x == 0, 1.0, x)`, follow
    `x`; the other arguments take sample values). It reports the guard when `EXPR` tends to
    `CONST` as `x` approaches `c` (the guard only protects a 0/0 or a log(0)) while `EXPR`'s slope
    there is clearly not zero, and, where the rule's whole output can be evaluated too, the
    output's slope near `x == c` changes when the where is frozen at `CONST` (as JAX
    differentiates it at `c`). It stays silent when `EXPR` tends to another value (a deliberate
    choice at a kink, such as a subgradient), when its slope there is zero, when the output does
    not feel it (the where's value squared where it is 0), when `x` is an integer or a nondiff
    argument, for a where that only computes a jvp rule's primal output, and when anything cannot
    be evaluated.

    ## Why is this bad?
    The guard makes the first derivative right, but its constant branch has derivative zero: when
    JAX differentiates the rule itself (`grad(grad(f))`, `jax.hessian`, a mixed second
    derivative), the slope of `EXPR` at `x == c` is replaced by 0, and every higher derivative
    through that point is silently wrong (jax-ml/jax#40627: `jnp.i0`'s second derivative at 0;
    jax-ml/jax#12033: `lax.pow`'s mixed derivative at `y == 0`). Measured on JAX 0.10.2
    (`docs/facts/scripts/hazard_where_guard_higher_derivative.py`): a sinc whose rule guards its
    slope with `where(x == 0, 0.0, ...)` gives `grad(grad(sinc))(0.0) == 0.0` for -1/3, and
    `jax.hessian` agrees with the wrong value; first derivatives are right, nothing raises.

    ## Example
    ```python
    @jax.custom_jvp
    def sinc(x):
        safe = jnp.where(x == 0, 1.0, x)
        return jnp.where(x == 0, 1.0, jnp.sin(safe) / safe)

    @sinc.defjvp
    def sinc_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        safe = jnp.where(x == 0, 1.0, x)
        slope = jnp.where(x == 0, 0.0, (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)
        return sinc(x), slope * dx
    ```

    ## Use instead
    Keep the guarded branch differentiable: near `c`, select a Taylor expansion that has the
    right slope, evaluated at the real `x` (the "double where" keeps NaNs out of the other branch):
    ```python
        small = jnp.abs(x) < 1e-3
        safe = jnp.where(small, 1.0, x)
        slope = jnp.where(small, -x / 3.0 + x ** 3 / 30.0,
                          (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)
    ```

    ## Fix safety
    No fix: the expansion is the author's. When higher derivatives are never taken through this
    rule, mark the line with `# noqa: VJP612`.
    """

    CODE = "VJP612"
    NAME = "jvp-where-guard-drops-higher-derivative"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    NEEDS = re.compile(r"where|select")  # where_guards.SELECTS: `jnp.where`, `lax.select`, however imported

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def sinc(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 1.0, jnp.sin(safe) / safe)

@sinc.defjvp
def sinc_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    safe = jnp.where(x == 0, 1.0, x)
    slope = jnp.where(x == 0, 0.0, (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)
    return sinc(x), slope * dx
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def soft_sign(x):
    return x / (1.0 + jnp.abs(x))

@soft_sign.defjvp
def soft_sign_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    slope = jnp.where(x == 0, 1.0, 1.0 / (1.0 + jnp.abs(x)) ** 2)
    return soft_sign(x), slope * dx
''']

    def check(self) -> None:
        # vjplint.rules.linearity._where_guards evaluates the rules near each guard; the words are here.
        for found in dropped_slopes(self.model):
            self._report(found)

    def _report(self, found: DroppedSlope) -> None:
        d, rule, guard, slope, h, value = found.d, found.rule, found.guard, found.slope, found.h, found.value
        role = "jvp rule" if d.kind == "jvp" else "bwd"
        c = f"{guard.value:g}"
        self.report(guard.call,
                    f"`{self.quote(guard.call, 50)}` in {rule_label(rule, role)} of {d.label} `{d.name}` replaces "
                    f"`{self.quote(guard.expression, 40)}` by its own limit {guard.constant:g} at `{guard.name} == {c}` "
                    f"(it is {value:.4g} at {guard.name} = {guard.value + h:g}); the expression's slope there "
                    f"(≈ {slope:.4g} per unit of `{guard.name}`) is lost, since the constant branch has derivative 0: "
                    f"second derivatives through `{guard.name} == {c}` (grad of grad, jax.hessian) are silently "
                    f"wrong while first derivatives are right; keep the branch differentiable (a Taylor expansion "
                    f"near {c} under a double where), or mark code never differentiated twice with `# noqa: {self.CODE}`")

