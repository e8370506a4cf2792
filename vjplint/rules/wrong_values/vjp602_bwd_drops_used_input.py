from __future__ import annotations

import ast
from typing import Dict, List, Optional

from vjplint.diagnostics import Severity
from vjplint.facts.dependence import (PrimalFlow, differentiated_at_call, evidently_not_differentiated,
                                      zero_cotangent)
from vjplint.model.file_model import CustomDerivative, Signature
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode


class BwdDropsUsedInput(Rule):
    """## What it does
    Flags a `jax.custom_vjp` whose bwd returns `None` or a literal zero (`0.0`, `jnp.zeros_like(...)`)
    for a differentiable argument that the primal's output depends on: the argument reaches a
    return value of the primal through arithmetic or differentiable `jnp`/`lax` functions (not
    only through indexing, comparisons, shapes, `stop_gradient` or integer casts). Arguments that
    are evidently not differentiated (annotated or defaulting to Python values, used as Python
    values, named like integer arrays, masks or keys: `idx`, `mask`, `key`) are left alone, and a
    dependence through a function the linter does not follow is not claimed. The calls of the
    custom_vjp in the run decide whether a gradient may flow into the argument: it is reported
    when some call passes a value computed from arrays, a traced value (a parameter of a custom
    derivative's rule, of a function under `jax.grad`/`jit`/`vmap`/`scan`, or a closure over
    one) or one the linter cannot read, and when nothing in the run shows what is passed (no
    call: a library's API; the function handed to a transformation or registered as another
    rule); it is not when every call passes a literal, a module-level constant, or a bare
    parameter of a function nothing shows traced (a smoothing hyperparameter passed through; a
    lambda handed to another call, a method, or a function decorated or passed around may be
    traced by code the linter does not follow, so their parameters count as traced).
    The message quotes the call that shows the flow. A bwd that gives a
    gradient to an input the output does not use (a straight-through estimator routing the
    gradient of a quantized copy to the original, as in flax's fp8 ops) is a design, not reported.

    ## Why is this bad?
    JAX treats `None` in bwd's output as a zero cotangent and never checks it against the
    primal: the gradient with respect to that argument is silently zero, and so is the gradient
    of everything upstream of it when the argument is computed from differentiated values
    (jax-ml/jax#17496: in a two-layer chain the first layer's weights got a zero gradient).
    Measured (`docs/facts/scripts/hazard_none_cotangent.py`): `None`, `jnp.zeros_like(v)` and
    `0.0 * g` all give zeros under `grad` and `jit(grad)`, with no error. When the custom_vjp is
    itself the bwd of another one, a `None` for the residuals it received makes
    `jax.grad(jax.grad(f))` silently zero (jax-ml/jax#21220).

    ## Example
    ```python
    @jax.custom_vjp
    def matvec(m, v):
        return m @ v

    def matvec_fwd(m, v):
        return m @ v, v

    def matvec_bwd(v, g):
        return jnp.outer(g, v), None     # the output depends on v
    ```

    ## Use instead
    ```python
    def matvec_fwd(m, v):
        return m @ v, (m, v)

    def matvec_bwd(res, g):
        m, v = res
        return jnp.outer(g, v), m.T @ g
    ```
    When the argument is an integer array, a key, or is never differentiated, `None` is right:
    silence the warning with `# noqa: VJP602`, or pass a Python value in `nondiff_argnums`.

    ## Fix safety
    No automatic fix: the missing cotangent has to be derived. The fixes that write a `None`
    for an argument that was never differentiated (VJP101/VJP102's residual-plus-None, VJP201's,
    VJP307's `(None,)`) mark it `# noqa: VJP602` where this rule would read it, and are unsafe
    there: differentiating with respect to that argument raised before and gives zero after.
    """

    CODE = "VJP602"
    NAME = "bwd-drops-used-input"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def matvec(m, v):
    return m @ v

def matvec_fwd(m, v):
    return m @ v, v

def matvec_bwd(v, g):
    return jnp.outer(g, v), None

matvec.defvjp(matvec_fwd, matvec_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def matvec(m, v):
    return m @ v

def matvec_fwd(m, v):
    return m @ v, (m, v)

def matvec_bwd(res, g):
    m, v = res
    return jnp.outer(g, v), m.T @ g

matvec.defvjp(matvec_fwd, matvec_bwd)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.kind != "vjp" or d.api != "jax" or d.primal is None or d.nondiff_unresolved or d.bound_self:
            return
        primal = d.primal
        if primal.args.vararg is not None or primal.args.kwonlyargs:
            return
        sig = Signature.of(primal)
        diff = [p for i, p in enumerate(sig.positional) if i not in d.nondiff]
        for reg in d.registrations:
            if reg.method == "defvjp" and len(reg.rules) == 2 and reg.rules[1].node is not None:
                self._check(d, primal, sig, diff, reg.rules[1].node, reg.rules[1].name)

    def _check(self, d: CustomDerivative, primal: FunctionNode, sig: Signature, diff: List[str],
               bwd: FunctionNode, bwd_name: Optional[str]) -> None:
        returns = [r.value for r in self.model.facts.returns_of(bwd)]
        if not returns or not all(isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(diff)
                                  and not any(isinstance(e, ast.Starred) for e in v.elts) for v in returns):
            return
        flows = PrimalFlow(self, primal)
        for i, param in enumerate(diff):
            if not all(self._zero(v.elts[i]) for v in returns) and flows.reaches_output(param) is None:  # type: ignore[union-attr]
                return  # a gradient for an input the output does not use: rerouted (straight-through) by design
        for i, param in enumerate(diff):
            slots = [v.elts[i] for v in returns]  # type: ignore[union-attr]
            if not all(self._zero(s) for s in slots) or self._not_differentiated(primal, sig, param):
                continue
            through = flows.reaches_output(param)
            if through is None:
                continue
            differentiated, evidence = differentiated_at_call(self.model, d, sig.positional.index(param), param)
            if not differentiated:
                continue  # every call passes a constant or a bare parameter nothing shows traced
            if isinstance(slots[0], ast.Constant) and slots[0].value is None:
                shown = "`None`"
            elif isinstance(slots[0], (ast.Tuple, ast.List)):
                shown = f"`{self.quote(slots[0], 30)}` (zero cotangents)"
            else:
                shown = f"a zero (`{self.quote(slots[0], 30)}`)"
            name = bwd_name or getattr(bwd, "name", "<lambda>")
            outer = next((o for o in self._bwd_owners().get(id(d.primal), ()) if o is not d), None)
            nested = (f" `{d.name}` is the bwd of custom_vjp `{outer.name}`, so `jax.grad(jax.grad({outer.name}))` "
                      f"loses this term (jax-ml/jax#21220)." if outer is not None else "")
            called = ""
            if evidence is not None and evidence.passed:
                traced = " (a traced value)" if evidence.traced else ""
                called = f", and the call at {evidence.where} passes it `{evidence.passed}`{traced}"
            self.report(slots[0], (
                f"bwd `{name}` of `{d.name}` returns {shown} for `{param}`, but the primal's output depends on "
                f"`{param}` (`{self.quote(through, 50)}`){called}: JAX takes it as a zero cotangent without a "
                f"check, so the gradient with respect to `{param}`, and of everything upstream that `{param}` is "
                f"computed from (jax-ml/jax#17496), may be silently zero.{nested} Return its cotangent; if "
                f"`{param}` is an integer array or is never differentiated, keep it and silence this with "
                f"`# noqa: VJP602`"))

    def _bwd_owners(self) -> Dict[int, List[CustomDerivative]]:
        """id(bwd node) -> the derivatives registering it as bwd, in order; built once per check
        (a scan of every derivative per report was quadratic in dense modules)."""
        cached = getattr(self, "_owners", None)
        if cached is not None and cached[0] is self.model:
            return cached[1]
        owners: Dict[int, List[CustomDerivative]] = {}
        for o in self.model.derivatives:
            for reg in o.registrations:
                for r in reg.rules[1:2]:
                    if r.node is not None:
                        found = owners.setdefault(id(r.node), [])
                        if not any(x is o for x in found):
                            found.append(o)
        self._owners = (self.model, owners)
        return owners

    def _zero(self, expr: ast.expr) -> bool:
        return zero_cotangent(self.model, expr)

    def _not_differentiated(self, primal: FunctionNode, sig: Signature, param: str) -> bool:
        return evidently_not_differentiated(self.model, primal, param)
