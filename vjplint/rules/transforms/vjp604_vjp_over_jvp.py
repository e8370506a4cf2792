from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule


class VjpOverJvp(Rule):
    """## What it does
    Flags a `jax.custom_vjp` wrapped around a `jax.custom_jvp` function: the same name rebound
    (`f = jax.custom_jvp(f)`, `f.defjvp(...)`, then `f = jax.custom_vjp(f)`), or
    `@jax.custom_vjp` stacked above `@jax.custom_jvp` on one `def`.

    ## Why is this bad?
    The two cannot be combined this way: every transformation meets the outer custom_vjp first, so
    the jvp rule is never used. Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_families.py`,
    section D): `grad`, `grad(grad)` and `hessian` work (they use fwd/bwd), `jax.jvp` and
    `jax.jacfwd` raise `TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp
    function.` (jax-ml/jax#3996); with the decorators stacked the inner custom_jvp cannot get a
    rule, and an eager call raises `AttributeError: No JVP defined for custom_jvp function ...`
    (grad still works). The other order, a
    custom_jvp around a custom_vjp, works for `grad`, `jvp` and `hessian` (both use the jvp rule).

    ## Example
    ```python
    f = jax.custom_jvp(f)
    f.defjvp(f_jvp)
    f = jax.custom_vjp(f)
    f.defvjp(f_fwd, f_bwd)
    ```

    ## Use instead
    Keep one of them: a custom_jvp alone serves forward and reverse mode; a custom_vjp alone
    serves reverse mode. To use a jvp rule for forward mode and fwd/bwd for reverse mode, put the
    custom_jvp outside and call the custom_vjp in its primal.

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP604"
    NAME = "custom-vjp-over-custom-jvp"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})
    INVALID = ['''
import jax
import jax.numpy as jnp

def f(x):
    return jnp.sin(x)

f = jax.custom_jvp(f)
f.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
f = jax.custom_vjp(f)
f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

def _f(x):
    return jnp.sin(x)

inner = jax.custom_vjp(_f)
inner.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
f = jax.custom_jvp(inner)
f.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
''']

    def check(self) -> None:
        self._jvps = [d for d in self.model.derivatives if d.kind == "jvp" and d.api == "jax"]

    def check_derivative(self, d: CustomDerivative) -> None:
        below = self._jvp_decorator_below(d)
        if below is not None:
            self.report(d.anchor, (
                f"`@{self.quote(d.anchor, 30)}` is stacked above `@{self.quote(below, 30)}` on `{d.name}`: the name "
                f"holds the custom_vjp, so the inner custom_jvp never gets a rule, an eager call raises "
                f"AttributeError: No JVP defined for custom_jvp function {d.name} using defjvp, and `jax.jvp` "
                f"raises TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function "
                f"(jax-ml/jax#3996); only grad works. Remove one of the two decorators"))
            return
        inner = self._wrapped_jvp(d, self._jvps)
        if inner is None:
            return
        self.report(d.anchor, (
            f"`{self.quote(d.creation, 40)}` wraps the custom_jvp `{inner.name}` (line {inner.anchor.lineno}): every "
            f"transformation meets the outer custom_vjp first, so the jvp rule is never used. `jax.jvp` and "
            f"`jax.jacfwd` of `{d.name}` raise TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp "
            f"function (jax-ml/jax#3996); grad and hessian use fwd/bwd. Keep one of the two, or put the "
            f"custom_jvp outside and call the custom_vjp in its primal (that order works)"))

    def _jvp_decorator_below(self, d: CustomDerivative) -> Optional[ast.expr]:
        """`@jax.custom_jvp` (or `@partial(jax.custom_jvp, ...)`) below d's decorator on the same def."""
        decorators = getattr(d.primal, "decorator_list", [])
        if d.anchor not in decorators:
            return None
        for dec in decorators[decorators.index(d.anchor) + 1:]:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(dec, ast.Call) and self.model.index.qualname(dec.func) == "functools.partial" and dec.args:
                target = dec.args[0]
            if self.model.index.qualname(target) == "jax.custom_jvp":
                return dec
        return None

    def _wrapped_jvp(self, d: CustomDerivative, jvps: list) -> Optional[CustomDerivative]:
        creation = d.creation
        if not (isinstance(creation, ast.Call) and creation.args and isinstance(creation.args[0], ast.Name)):
            return None
        name = creation.args[0].id
        earlier = [j for j in jvps if j.name == name and j.enclosing is d.enclosing and j.anchor.lineno < creation.lineno]
        return earlier[-1] if earlier else None
