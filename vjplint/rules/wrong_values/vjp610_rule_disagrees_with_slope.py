from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

from vjplint.diagnostics import Severity, SlopeDisagrees
from vjplint.facts.scalar_eval import ScalarEvaluator, Unsupported
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label

# Sample values for the arguments: positive and inside (-1, 1), so that log, sqrt, arcsin and
# friends are defined; each point gives each argument another value.
SAMPLES = (0.37, 0.81, 0.58, 0.23, 0.66, 0.44, 0.72)
POINTS = 3
MAX_ARGS = 4
REL_TOL = 1e-4


@dataclass
class Slot:
    """One argument's derivative from the rule and from the primal, at each point evaluated."""

    name: str
    pairs: List[Tuple[Tuple[float, ...], float, float]] = field(default_factory=list)  # point, rule, slope

    def agrees(self) -> bool:
        """Right at every point, where the primal is not flat (a zero for an unused argument
        agrees trivially and says nothing about the author's formulas)."""
        return len(self.pairs) >= 2 and all(_close(r, s) for _, r, s in self.pairs) \
            and any(abs(s) > 1e-9 for _, _, s in self.pairs)

    def disagrees(self) -> bool:
        """Off at every point, and the primal is not flat there (a surrogate for a step)."""
        return len(self.pairs) >= 2 and all(not _close(r, s) for _, r, s in self.pairs) \
            and any(abs(s) > 1e-9 for _, _, s in self.pairs)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


class RuleDisagreesWithSlope(Rule):
    """## What it does
    Evaluates a custom_vjp's fwd and bwd, or a custom_jvp's rule, on sample numbers in plain
    Python (no JAX) and compares the derivative each gives for every argument with the slope of
    the primal itself (a central difference). It reads only small elementwise functions:
    straight-line bodies of arithmetic, `jnp`/`lax`/`jax.nn` elementwise functions, `jnp.where`,
    module constants and calls of such functions; anything else is left alone. It reports an
    argument whose derivative is off at every sample point when at least one other argument's
    derivative agrees with the slope at every point, the sign of a slip rather than of a
    deliberately different gradient (a straight-through estimator, a gradient reversal, a
    surrogate for a step function, whose every argument differs; a zero for an argument the
    primal does not use does not count as agreeing). A custom_vjp's bwd whose cotangents of two
    arguments are each, at every point, the slope along the other (and not their own), every other
    argument right, is reported as returning them swapped.

    ## Why is this bad?
    JAX never compares a custom rule with its primal: a wrong sign or a dropped factor gives
    silently wrong gradients under `grad`, `jit(grad)`, `vmap(grad)`, `jvp` and `jacfwd`
    (jax-ml/jax#13048, jax-ml/jax#3213). Measured on JAX 0.10.2
    (`docs/facts/scripts/hazard_rule_disagrees_with_slope.py`): a bwd returning `-cos(p) * g` for the
    gain of `cos(p) * gain` runs everywhere and `jax.grad` returns the negated derivative,
    and `jax.test_util.check_grads` is what catches it.

    ## Example
    ```python
    @jax.custom_vjp
    def modulated(phase, gain):
        return jnp.cos(phase) * gain

    def modulated_fwd(phase, gain):
        return modulated(phase, gain), (phase, gain)

    def modulated_bwd(res, g):
        phase, gain = res
        return (-jnp.sin(phase) * gain * g, -jnp.cos(phase) * g)

    modulated.defvjp(modulated_fwd, modulated_bwd)
    ```

    ## Use instead
    ```python
        return (-jnp.sin(phase) * gain * g, jnp.cos(phase) * g)
    ```
    and test every custom rule with `jax.test_util.check_grads` (or `vjplint check-grads`).

    ## Fix safety
    No fix: the right formula is the author's. A gradient altered on purpose for one argument
    only is reported too; say so with `# noqa: VJP610` on the line.
    """

    CODE = "VJP610"
    NAME = "rule-disagrees-with-slope"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    APIS = frozenset({"jax"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def modulated(phase, gain):
    return jnp.cos(phase) * gain

def modulated_fwd(phase, gain):
    return modulated(phase, gain), (phase, gain)

def modulated_bwd(res, g):
    phase, gain = res
    return (-jnp.sin(phase) * gain * g, -jnp.cos(phase) * g)

modulated.defvjp(modulated_fwd, modulated_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def modulated(phase, gain):
    return jnp.cos(phase) * gain

def modulated_fwd(phase, gain):
    return modulated(phase, gain), (phase, gain)

def modulated_bwd(res, g):
    phase, gain = res
    return (-jnp.sin(phase) * gain * g, jnp.cos(phase) * g)

modulated.defvjp(modulated_fwd, modulated_bwd)
''']

    def check(self) -> None:
        self._evaluator = self.model.facts.scalar_evaluator()

    def check_derivative(self, d: CustomDerivative) -> None:
        sig = d.signature
        if d.primal is None or d.nondiff or d.nondiff_unresolved or d.bound_self or sig is None or sig.vararg or \
                sig.kwonly or not 1 <= len(sig.positional) <= MAX_ARGS:
            return
        if d.kind == "vjp":
            for reg, fwd, bwd in self.model.facts.checked_vjp_rules(d):
                if fwd is not None and bwd is not None and self.model.facts.registered_here(d, reg.node):
                    self._check_vjp(self._evaluator, d, sig.positional, fwd, bwd)
        else:
            for reg, rule in self.model.facts.jvp_rules(d):
                if self.model.facts.registered_here(d, reg.node):
                    self._check_jvp(self._evaluator, d, sig.positional, rule)

    # custom_vjp: bwd(fwd's residuals, 1.0) against the primal's slope.
    def _check_vjp(self, ev: ScalarEvaluator, d: CustomDerivative, params: List[str], fwd: RuleFunction,
                   bwd: RuleFunction) -> None:
        if not _plain(fwd, ev) or not _plain(bwd, ev):
            return
        slots = [Slot(p) for p in params]
        for point in _points(len(params)):
            try:
                fwd_out = ev.call(fwd.node, ev.bound_values(fwd) + point)  # type: ignore
                if not isinstance(fwd_out, tuple) or len(fwd_out) != 2:
                    return
                cotangents = ev.call(bwd.node, ev.bound_values(bwd) + [fwd_out[1], 1.0])  # type: ignore
                if not isinstance(cotangents, tuple) or len(cotangents) != len(params):
                    return
                slopes = self._slopes(ev, d, point)
            except Unsupported:
                continue
            for slot, ct, slope in zip(slots, cotangents, slopes):
                if isinstance(ct, float) and slope is not None:
                    slot.pairs.append((tuple(point), ct, slope))
        returned = _returned_tuple(self.model, bwd)
        swap = _swapped(slots)
        if swap is not None:
            self._report_swap(d, bwd, returned, slots, *swap)
            return
        for i, slot in self._slips(slots):
            node = returned.elts[i] if returned is not None and len(returned.elts) == len(params) else bwd.node
            self._report(d, node, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}` returns "
                                  f"`{self.quote(node, 50)}` as the cotangent of `{slot.name}`, which"
                         if node is not bwd.node else
                         f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}` gives a cotangent of `{slot.name}` that",
                         slot, slots, "per unit cotangent")

    # custom_jvp: the rule's tangent for a unit tangent of each argument against the slope.
    def _check_jvp(self, ev: ScalarEvaluator, d: CustomDerivative, params: List[str], rule: RuleFunction) -> None:
        if not _plain(rule, ev) or len(rule.effective_positional() or ()) != 2:
            return
        slots = [Slot(p) for p in params]
        for point in _points(len(params)):
            try:
                slopes = self._slopes(ev, d, point)
            except Unsupported:
                continue
            for i, slot in enumerate(slots):
                unit = tuple(1.0 if j == i else 0.0 for j in range(len(params)))
                try:
                    out = ev.call(rule.node, ev.bound_values(rule) + [tuple(point), unit])  # type: ignore
                except Unsupported:
                    continue
                if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], float) and slopes[i] is not None:
                    slot.pairs.append((tuple(point), out[1], slopes[i]))  # type: ignore[arg-type]
        returned = _returned_tuple(self.model, rule)
        node = returned.elts[1] if returned is not None and len(returned.elts) == 2 else rule.node
        for _, slot in self._slips(slots):
            self._report(d, node, f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the tangent "
                                  f"`{self.quote(node, 50)}`, whose part for `{slot.name}`"
                         if node is not rule.node else
                         f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` gives a tangent for `{slot.name}` "
                         f"that", slot, slots, f"per unit tangent of `{slot.name}`")

    def _slopes(self, ev: ScalarEvaluator, d: CustomDerivative, point: Sequence[float]) -> List[Optional[float]]:
        """The primal's central difference along each argument; raises Unsupported."""
        assert d.primal is not None
        if not isinstance(ev.call(d.primal, point), float):
            raise Unsupported("a primal that is not a number")
        slopes: List[Optional[float]] = []
        for i, x in enumerate(point):
            h = 1e-6 * max(1.0, abs(x))
            up = list(point)
            down = list(point)
            up[i], down[i] = x + h, x - h
            hi, lo = ev.call(d.primal, up), ev.call(d.primal, down)
            slopes.append((hi - lo) / (2 * h) if isinstance(hi, float) and isinstance(lo, float) else None)
        return slopes

    @staticmethod
    def _slips(slots: List[Slot]) -> List[Tuple[int, Slot]]:
        """Arguments off at every point, when some other argument agrees at every point."""
        if not any(s.agrees() for s in slots):
            return []
        return [(i, s) for i, s in enumerate(slots) if s.disagrees()]

    def _report_swap(self, d: CustomDerivative, bwd: RuleFunction, returned: Optional[ast.Tuple],
                     slots: List[Slot], i: int, j: int) -> None:
        node = returned if returned is not None and len(returned.elts) == len(slots) else bwd.node
        a, b = slots[i], slots[j]
        point, got_a, slope_a = a.pairs[0]
        _, got_b, slope_b = b.pairs[0]
        where = ", ".join(f"{s.name}={v:g}" for s, v in zip(slots, point))
        self.report(node, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}` returns its cotangents of `{a.name}` and "
                          f"`{b.name}` swapped: at every sample point each is the primal's slope along the other "
                          f"(at {where}: {got_a:.4g} in `{a.name}`'s place where `{d.name}` changes by {slope_a:.4g} "
                          f"per unit of `{a.name}` and by {got_a:.4g} per unit of `{b.name}`; {got_b:.4g} in "
                          f"`{b.name}`'s place, where its slope is {slope_b:.4g}). JAX reads bwd's result by "
                          f"position, so gradients with respect to both are silently wrong (or raise when the "
                          f"shapes differ): return them in the order of `{d.name}`'s parameters")

    def _report(self, d: CustomDerivative, node: ast.AST, head: str, slot: Slot, slots: List[Slot],
                unit: str) -> None:
        point, got, slope = slot.pairs[0]
        where = ", ".join(f"{s.name}={v:g}" for s, v in zip(slots, point))
        right = ", ".join(f"`{s.name}`" for s in slots if s.agrees())
        sign = " (the opposite sign)" if _close(got, -slope) else ""
        primal = self.model.facts.returns_of(d.primal)  # type: ignore[arg-type]
        shown = f"`{self.quote(primal[0].value, 40)}`" if len(primal) == 1 and primal[0].value is not None \
            else f"`{d.name}`"
        self.report(node, f"{head} disagrees with the primal's slope at every sample point: at {where} it gives "
                          f"{got:.4g} {unit} where {shown} changes by {slope:.4g} per unit of `{slot.name}`"
                          f"{sign}, while the derivative for {right} agrees; gradients with respect to "
                          f"`{slot.name}` may be silently wrong under grad, jvp and jacfwd: check the formula "
                          f"(jax.test_util.check_grads), or mark a deliberate change with `# noqa: {self.CODE}`",
                    evidence=SlopeDisagrees(d.name, slot.name, _close(got, 0.0)))


def _swapped(slots: List[Slot]) -> Optional[Tuple[int, int]]:
    """Two arguments whose derivatives from bwd are each the other's slope at every point (and
    not equal to their own), with every other argument right: cotangents returned swapped."""
    if len(slots) < 2 or any(len(s.pairs) < 2 or len(s.pairs) != len(slots[0].pairs) for s in slots):
        return None
    if any(s.pairs[k][0] != slots[0].pairs[k][0] for s in slots for k in range(len(s.pairs))):
        return None
    for i in range(len(slots)):
        for j in range(i + 1, len(slots)):
            a, b = slots[i], slots[j]
            crossed = all(_close(ra, sb) and _close(rb, sa) for (_, ra, sa), (_, rb, sb) in zip(a.pairs, b.pairs))
            own = a.disagrees() and b.disagrees()
            rest = all(s.agrees() or all(abs(sl) <= 1e-9 for _, _, sl in s.pairs)
                       for k, s in enumerate(slots) if k not in (i, j))
            if crossed and own and rest:
                return i, j
    return None


def _plain(rule: RuleFunction, ev: ScalarEvaluator) -> bool:
    return rule.node is not None and ev.bound_values(rule) is not None


def _points(n: int) -> List[List[float]]:
    return [[SAMPLES[(k + 2 * i) % len(SAMPLES)] for i in range(n)] for k in range(POINTS)]


def _returned_tuple(model: Any, rule: RuleFunction) -> Optional[ast.Tuple]:
    """The tuple literal a rule returns, when it has one return."""
    returns = model.facts.returns_of(rule.node)
    if len(returns) == 1 and isinstance(returns[0].value, ast.Tuple):
        return returns[0].value
    return None
