from __future__ import annotations

import ast
from typing import Dict, List, Optional

from vjplint.diagnostics import DroppedCotangent, Severity
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

    Where the calls show no gradient (a library's API called with bare parameters, a primal
    through a helper the linter does not follow), the bwd's own code can: the rule reports a
    `None` or zero for an input when a local named for that input (`dq` for `q`, `grad_x`,
    `x_bar`) is computed in the bwd and never used; when every input gets `None` (a computed
    `jnp.zeros_like(x)` reads as meant: a solver's initial guess) and the cotangent reaches no return (read only by a print, or not at all); or when the primal's
    output depends on the input and residuals fwd saves are unpacked and never read. The message
    quotes that evidence and says "may": a zero gradient can be a design, and `del g` (or a
    cotangent named `_...`) says so and keeps the rule silent, as does a primal that returns None.

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
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})
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
        if d.primal is None or d.nondiff_unresolved or d.bound_self or \
                self.model.facts.integers().primal_output(d) is not None:
            return  # an integer output (indices) has a float0 cotangent: a zero gradient is the true one
        primal = d.primal
        if primal.args.vararg is not None or primal.args.kwonlyargs:
            return
        sig = self.model.signature(primal)
        diff = [p for i, p in enumerate(sig.positional) if i not in d.nondiff]
        for reg in d.registrations:
            if reg.method == "defvjp" and len(reg.rules) == 2 and reg.rules[1].node is not None and \
                    not reg.rules[1].bound_keywords:
                self._check(d, primal, sig, diff, reg.rules[1].node, reg.rules[1].name, reg.rules[1].bound_positional)

    def _check(self, d: CustomDerivative, primal: FunctionNode, sig: Signature, diff: List[str],
               bwd: FunctionNode, bwd_name: Optional[str], bound: int = 0) -> None:
        """`bound`: leading parameters of `bwd` a `functools.partial` binds at the registration."""
        returns = [r.value for r in self.model.facts.returns_of(bwd)]
        if not returns or not all(isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(diff)
                                  and not any(isinstance(e, ast.Starred) for e in v.elts) for v in returns):
            return
        zero = [all(self._zero(v.elts[i]) for v in returns) for i in range(len(diff))]  # type: ignore[union-attr]
        # a local named for the input, computed and never used, is evidence whatever the primal shows
        if any([self._bwd_evidence(d, bwd, bwd_name, param, diff, returns[0].elts[i], False, strong=True,
                                              bound=bound)  # type: ignore
                for i, param in enumerate(diff) if zero[i] and not self._not_differentiated(primal, sig, param)]):
            return
        if self._dead_value(d, bwd, bwd_name, diff, returns, zero, sig, bound):
            return
        flows = self.model.facts.primal_flow(primal)
        for i, param in enumerate(diff):
            if not zero[i] and flows.reaches_output(param) is None:
                return  # a gradient for an input the output does not use: rerouted (straight-through) by design
        for i, param in enumerate(diff):
            slots = [v.elts[i] for v in returns]  # type: ignore[union-attr]
            if not zero[i] or self._not_differentiated(primal, sig, param):
                continue
            through = flows.reaches_output(param)
            differentiated, evidence = self.model.facts.differentiated_at_call(d, sig.positional.index(param), param) \
                if through is not None else (False, None)
            if not differentiated:  # the calls do not show a gradient: the bwd's own code may
                # every entry `None` (not a computed `zeros_like`: a solver's initial guess gets one on purpose)
                all_none = all(isinstance(e, ast.Constant) and e.value is None for v in returns for e in v.elts)  # type: ignore
                if self._bwd_evidence(d, bwd, bwd_name, param, diff, slots[0], all_none, used=through is not None,
                                      bound=bound) \
                        and all_none:
                    return  # the bwd's unread cotangent is reported once, for every input
                continue
            if isinstance(slots[0], ast.Constant) and slots[0].value is None:
                shown = "`None`"
            elif isinstance(slots[0], (ast.Tuple, ast.List)):
                shown = f"`{self.quote(slots[0], 30)}` (zero cotangents)"
            else:
                shown = f"a zero (`{self.quote(slots[0], 30)}`)"
            name = bwd_name or getattr(bwd, "name", "<lambda>")
            outer = next((o for o in self._bwd_owners().get(d.primal, ()) if o is not d), None)
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
                f"`# noqa: VJP602`"),
                evidence=DroppedCotangent(name, d.name, (param,), "none" if shown == "`None`" else "zero", "output"))

    def _bwd_evidence(self, d: CustomDerivative, bwd: FunctionNode, bwd_name: Optional[str], param: str,
                      diff: List[str], slot: ast.expr, all_zero: bool, strong: bool = False, used: bool = False,
                      bound: int = 0) -> bool:
        """A `None` (or zero) for `param` where the bwd's own code shows a cotangent was meant
        (`vjplint/facts/rule_evidence.py`): a local named for `param` computed and never used, a
        cotangent never read while every input gets a zero, residuals fwd saves never read (only
        where the primal's output shows it depends on `param`: `used`). A
        warning that says "may": a zero gradient can be a design (a stop-gradient)."""
        params = self.model.facts.passed_to_bwd(bwd, self.model.facts.nondiff_positions(d), bound)  # what JAX passes
        if params is None:
            return False
        if not self.model.facts.returns_a_value(d.primal):
            return False  # the primal returns None (a stub `...`): there is no gradient to lose
        why = self.model.facts.dropped_cotangent(bwd, param, tuple(diff), params[-1], params[-2], all_zero,
                                strong=strong, used=used)
        if why is None:
            return False
        name = bwd_name or getattr(bwd, "name", "<lambda>")
        shown = "`None`" if isinstance(slot, ast.Constant) and slot.value is None else f"`{self.quote(slot, 30)}`"
        if why.startswith("the bwd's cotangent") and len(diff) > 1:
            what = f"returns {shown} for every input ({', '.join(f'`{p}`' for p in diff)})"
            target, dropped = "every input of `" + d.name + "`", tuple(diff)
        else:
            what = f"returns {shown} for `{param}`"
            target, dropped = f"`{param}`", (param,)
        self.report(slot, (
            f"bwd `{name}` of `{d.name}` {what}, but {why}: JAX takes None as a zero cotangent without a check, "
            f"so the gradient with respect to {target} may be silently zero. Return the cotangent; if a zero "
            f"gradient is meant, say so with `jax.lax.stop_gradient` in the primal or silence this with "
            f"`# noqa: VJP602`"),
            evidence=DroppedCotangent(name, d.name, dropped, "none" if shown == "`None`" else "zero", "bwd"))
        return True

    def _dead_value(self, d: CustomDerivative, bwd: FunctionNode, bwd_name: Optional[str], diff: List[str],
                    returns: list, zero: List[bool], sig: Signature, bound: int) -> bool:
        """A zero for an input while bwd computes a value from its cotangent that reaches no
        return (`rule_evidence.dead_cotangent_value`): the use, not a name, shows a cotangent
        was dropped. With several zero slots a name (`dq` for `q`) picks one; else all are named."""
        assert d.primal is not None
        params = self.model.facts.passed_to_bwd(bwd, self.model.facts.nondiff_positions(d), bound)
        if params is None:
            return False
        zs = [i for i, p in enumerate(diff) if zero[i] and not self._not_differentiated(d.primal, sig, p)]
        dead = self.model.facts.dead_cotangent_value(bwd, params[-1]) if zs else None
        if dead is None:
            return False
        name, stmt = dead
        named = [i for i in zs if self.model.facts.slot_of(name, tuple(diff)) == diff[i]]
        zs = named or zs
        slot = returns[0].elts[zs[0]]
        shown = "`None`" if isinstance(slot, ast.Constant) and slot.value is None else f"`{self.quote(slot, 30)}`"
        which = " and ".join(f"`{diff[i]}`" for i in zs)
        self.report(slot, (
            f"bwd `{bwd_name or getattr(bwd, 'name', '<lambda>')}` of `{d.name}` returns {shown} for {which}, but "
            f"`{name}`, computed from the cotangent `{params[-1]}` (`{self.quote(stmt, 50)}`), reaches none of its "
            f"returns: it may be the cotangent meant for {'it' if len(zs) == 1 else 'one of them'}. JAX takes None as "
            f"a zero cotangent without a check, so the gradient may be silently zero. Return the cotangent; if a "
            f"zero gradient is meant, drop the unused computation or silence this with `# noqa: VJP602`"),
            evidence=DroppedCotangent(bwd_name or getattr(bwd, 'name', '<lambda>'), d.name, tuple(diff[i] for i in zs),
                                      "none" if shown == "`None`" else "zero", "dead"))
        return True

    def _bwd_owners(self) -> Dict[ast.AST, List[CustomDerivative]]:
        """bwd node -> the derivatives registering it as bwd, in order; built once per check
        (a scan of every derivative per report was quadratic in dense modules)."""
        cached = getattr(self, "_owners", None)
        if cached is not None and cached[0] is self.model:
            return cached[1]
        owners: Dict[ast.AST, List[CustomDerivative]] = {}
        for o in self.model.derivatives:
            for reg in o.registrations:
                for r in reg.rules[1:2]:
                    if r.node is not None:
                        found = owners.setdefault(r.node, [])
                        if not any(x is o for x in found):
                            found.append(o)
        self._owners = (self.model, owners)
        return owners

    def _zero(self, expr: ast.expr) -> bool:
        return self.model.facts.zero_cotangent(expr)

    def _not_differentiated(self, primal: FunctionNode, sig: Signature, param: str) -> bool:
        return self.model.facts.evidently_not_differentiated(primal, param)
