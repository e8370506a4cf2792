from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.ranks import Rank, Ranks
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._cotangent_leaves import bound_value, elements, returned_values

SHAPE_ERROR = ("`ValueError: Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
               "primal function, but at output[0] the bwd rule produced an output of type float32[] corresponding "
               "to an input of type float32[3], so the shapes do not match`")
TOTALS = frozenset({"sum", "mean", "nansum", "nanmean", "prod", "max", "min", "amax", "amin"})
_ARRAYS = ("jax.numpy.", "numpy.")


class BwdCotangentReducedElementwise(Rule):
    """## What it does
    Flags a custom_vjp bwd rule that returns, as an argument's cotangent, a reduction over every
    axis (`jnp.sum(e)`, `e.mean()`, no `axis=`) of a value `e` computed elementwise from the
    output cotangent `g` (and from the argument itself, saved in the residuals:
    `jnp.sum(g / (1 + jnp.abs(x)) ** 2)`), where the primal's output is elementwise in the
    argument and reads nothing but the primal's parameters (`0.5 + 0.5 * jnp.sign(x)`,
    `jnp.sin(x) * scale`; not `jnp.exp(-rate * T)` with a module-level array `T`, which a scalar
    `rate` broadcasts against). Then `g`, and `e`, have at least the argument's shape, so the
    total is a scalar however many entries the argument has: right only for a scalar argument,
    where the reduction does nothing. It stays silent when the argument's default is a number,
    when another differentiable argument gets an unreduced cotangent elementwise in `g` (then
    this one is likely a scalar broadcast over it, as `alpha` in `x ** alpha`, whose `jnp.sum`
    is right), and where VJP322 proves the argument has axes (an error there). It also flags
    such a total, whatever it reduces, returned for an argument the primal (and fwd) never
    broadcasts against another array: no arithmetic or broadcasting `jnp` function meets the
    argument itself with an array computed from nothing of it, in the primal or the module's
    functions it passes the argument to (`jnp.cumsum(x)`; not `logits / t`, where a scalar `t`
    is broadcast and its total is right). An argument annotated `float` stays silent.

    ## Why is this bad?
    JAX checks every cotangent's shape against its argument's. Measured on JAX 0.10.2
    (fixtures/rules/VJP349): for an array argument, `grad`, `jit(grad)` and `vmap(grad)` raise

        ValueError: Custom VJP bwd rule must produce an output with the same type as the args
        tuple of the primal function, but at output[0] the bwd rule produced an output of type
        float32[] corresponding to an input of type float32[3], so the shapes do not match

    A cotangent is reduced only over the axes broadcasting added to the argument (`axis=`, or
    `jnp.sum(..., axis=0)` for a batch), never over the argument's own.

    ## Example
    ```python
    def spike_bwd(x, g):
        surrogate = g / (10.0 * jnp.abs(x) + 1.0) ** 2
        return (jnp.sum(surrogate),)
    ```

    ## Use instead
    ```python
    def spike_bwd(x, g):
        surrogate = g / (10.0 * jnp.abs(x) + 1.0) ** 2
        return (surrogate,)
    ```

    ## Fix safety
    No fix: which axes broadcasting added is the author's to say.
    """

    CODE = "VJP349"
    NAME = "bwd-cotangent-reduced-elementwise"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def spike(x):
    return jnp.heaviside(x, 0.5)

def spike_fwd(x):
    return spike(x), x

def spike_bwd(x, g):
    surrogate = g / (10.0 * jnp.abs(x) + 1.0) ** 2
    return (jnp.sum(surrogate),)

spike.defvjp(spike_fwd, spike_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def power(x, alpha):
    return x ** alpha

def power_fwd(x, alpha):
    return power(x, alpha), (x, alpha)

def power_bwd(res, g):
    x, alpha = res
    return (g * alpha * x ** (alpha - 1), jnp.sum(g * x ** alpha * jnp.log(x)))

power.defvjp(power_fwd, power_bwd)
''']

    def check(self) -> None:
        facts = self.model.facts
        for d, fwd, bwd, params in facts.registered_bwds(lambda d: bool(facts.differentiable_names(d))):
            assert bwd.node is not None and d.primal is not None
            names = list(facts.differentiable_names(d) or ())
            returned = [found for found in (elements(self.model, value) for value, _ in
                                            returned_values(self.model, bwd.node))
                        if found is not None and len(found) == len(names) and any(
                            self._full_reduction(e) is not None for e in found)]
            contract = facts.contract_of(d) if returned else None
            if contract is None:
                continue  # no cotangent reduced over every axis (most bwds): nothing more to read
            reported: Set[ast.expr] = set()
            g = params[-1]
            saved: Dict[str, str] = {}
            for alias, param in [*facts.saved_parameters(d, contract.params), *self._whole_residual(d, fwd, params)]:
                saved.setdefault(param, alias)
            env = {g: Rank(g, 0, f"`{g}`")}
            env.update({alias: Rank(param, 0, f"`{alias}`") for param, alias in saved.items() if alias != g})
            like, exact = self._primal_like(d)
            for found in returned:
                fn = self.model.index.enclosing_function(found[0]) or bwd.node
                ranks = facts.ranks(fn, env if fn is bwd.node else {}, self._callees(fn))
                reduced = [self._full_reduction(e) for e in found]
                if any(r is None and g in ranks.at_least(e) for r, e in zip(reduced, found)):
                    continue  # another argument has the output's shape: a reduced one is likely a broadcast scalar
                for element, operand, name in zip(found, reduced, names):
                    if operand is None or self._scalar_default(d, name) or facts.param_axes(d, name) is not None:
                        continue
                    shown = ranks.at_least(operand)
                    others = shown & (set(names) - {name})
                    if g not in shown or name not in like or name not in shown and (name in saved or others) \
                            or exact and any(
                            isinstance(n, ast.Name) and n.id == g for n in ast.walk(element)):
                        continue  # VJP322 compares the ranks there
                    reported.add(element)
                    self.report(element, self._message(d, bwd, element, operand, name, g, name in shown))
            self._never_broadcast(d, fwd, bwd, returned, names, reported)

    def _never_broadcast(self, d: CustomDerivative, fwd: Optional[RuleFunction], bwd: RuleFunction,
                         returned: List[List[ast.expr]], names: List[str], done: Set[ast.expr]) -> None:
        """Report a total returned for an argument the primal (and fwd) never broadcasts against
        another array: its output then has the argument's axes, and so has its cotangent."""
        assert d.primal is not None
        sig = self.model.signature(d.primal).positional
        fwd_params = self.model.signature(fwd.node).positional[fwd.bound_positional:] \
            if fwd is not None and fwd.node is not None else []
        for found in returned:
            for element, name in zip(found, names):
                operand = self._full_reduction(element)
                if operand is None or element in done or name not in sig or self._scalar_default(d, name) or \
                        self.model.facts.param_axes(d, name) is not None or self._annotated_scalar(d, name):
                    continue
                places = [(d.primal, name)]
                if len(fwd_params) == len(sig):
                    places.append((fwd.node, fwd_params[sig.index(name)]))  # type: ignore[union-attr]
                if any(self.model.facts.broadcast_partner(fn, p) is not None for fn, p in places):
                    continue
                done.add(element)
                self.report(element, (
                    f"{rule_label(bwd, 'bwd')} returns `{self.quote(element, 40)}` as the cotangent of `{name}`, a "
                    f"reduction over every axis of `{self.quote(operand, 40)}`, but `{d.name}` never broadcasts "
                    f"`{name}` against another array, so its output, and the cotangent, have `{name}`'s axes: the "
                    f"cotangent is a scalar however many entries `{name}` has, and unless `{name}` is always a "
                    f"scalar, differentiating `{d.name}` may raise {SHAPE_ERROR}; return it unreduced"))

    def _annotated_scalar(self, d: CustomDerivative, name: str) -> bool:
        """`name: float` (or `int`, `bool`) in the primal's signature."""
        annotation = self.model.signature(d.primal).annotations.get(name)  # type: ignore[arg-type]
        return isinstance(annotation, ast.Name) and annotation.id in ("float", "int", "bool", "complex")

    def _whole_residual(self, d: CustomDerivative, fwd: Optional[RuleFunction], params) -> List[Tuple[str, str]]:
        """(bwd's residual parameter, primal parameter) when fwd saves one of its parameters as the
        whole residual (`return out, x`)."""
        if fwd is None or fwd.node is None or d.primal is None:
            return []
        fwd_params = self.model.signature(fwd.node).positional[fwd.bound_positional:]
        primal_params = self.model.signature(d.primal).positional
        saved = set()
        for _, value in self.model.facts.returns_of(fwd.node):
            if not isinstance(value, ast.Tuple) or len(value.elts) != 2 or not isinstance(value.elts[1], ast.Name) \
                    or value.elts[1].id not in fwd_params or len(fwd_params) != len(primal_params):
                return []
            saved.add(primal_params[fwd_params.index(value.elts[1].id)])
        return [(params[-2], saved.pop())] if len(saved) == 1 else []

    def _primal_like(self, d: CustomDerivative) -> Tuple[FrozenSet[str], bool]:
        """The parameter whose rank the primal's output has, exactly (elementwise in it and in
        nothing else of unknown rank: `0.5 + 0.5 * jnp.sign(x)`, not `jnp.exp(-rate * T)`)."""
        assert d.primal is not None
        returns = self.model.facts.returns_of(d.primal)
        if len(returns) != 1 or returns[0].value is None:
            return frozenset(), False
        sig = self.model.signature(d.primal)
        ranks: Ranks = self.model.facts.ranks(d.primal, {p: Rank(p, 0, f"`{p}`") for p in sig.positional},
                                              self._callees(d.primal))
        found = ranks.of(returns[0].value)
        if found is not None and found.offset == 0 and found.base is not None:
            return frozenset({found.base}), True
        if self._only_parameters(d.primal, returns[0].value, 0):
            return ranks.at_least(returns[0].value), False
        return frozenset(), False

    def _only_parameters(self, fn: FunctionNode, e: ast.expr, depth: int) -> bool:
        """Whether the values `e` reads are the primal's parameters and what it computes from them
        (no module-level array such as `T` in `jnp.exp(-rate * T)`, which a scalar broadcasts against)."""
        if depth > 3:
            return False
        for node in ast.walk(e):
            if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
                continue
            bindings = self.model.index.lookup(node.id, self.model.index.scope_of(node))
            if not bindings:
                continue  # a builtin
            for b in bindings:
                if b.kind in ("import", "def", "class", "param"):
                    continue
                owner = self.model.index.enclosing_function(b.node) if b.node is not None else None
                if owner is not fn or b.kind == "assign" and (b.value is None or not self._only_parameters(
                        fn, b.value, depth + 1)):
                    return False
        return True

    def _callees(self, fn: FunctionNode) -> Dict[str, FunctionNode]:
        """The module's functions `fn` calls by name (the custom function itself: its primal)."""
        found: Dict[str, FunctionNode] = {}
        for call in self.model.facts.calls_in(fn):
            if not isinstance(call.func, ast.Name) or call.func.id in found:
                continue
            d = self.model.facts.derivative_named(call.func)
            callee = d.primal if d is not None and d.primal is not None else named_function(self.model.index,
                                                                                            call.func)
            if callee is not None and callee is not fn:
                found[call.func.id] = callee
        return found

    def _full_reduction(self, element: ast.expr) -> Optional[ast.expr]:
        """What `element` reduces over every axis (`jnp.sum(e)`, `e.mean()`), a name bound once followed."""
        e = bound_value(self.model, element)
        if not isinstance(e, ast.Call) or e.keywords:
            return None
        q = self.model.index.qualname(e.func) or ""
        if q.startswith(_ARRAYS) and q.rsplit(".", 1)[-1] in TOTALS and len(e.args) == 1 \
                and not isinstance(e.args[0], ast.Starred):
            return e.args[0]
        if not q and isinstance(e.func, ast.Attribute) and e.func.attr in TOTALS and not e.args:
            return e.func.value
        return None

    def _scalar_default(self, d: CustomDerivative, name: str) -> bool:
        assert d.primal is not None
        if isinstance(d.primal, ast.Lambda):
            return False
        args = [*d.primal.args.posonlyargs, *d.primal.args.args]
        defaults: List[Optional[ast.expr]] = [None] * (len(args) - len(d.primal.args.defaults)) + \
            list(d.primal.args.defaults)
        for a, default in zip(args, defaults):
            if a.arg == name and isinstance(default, ast.Constant) and isinstance(default.value, (int, float)):
                return True
        return False

    def _message(self, d: CustomDerivative, bwd: RuleFunction, element: ast.expr, operand: ast.expr, name: str,
                 g: str, own: bool) -> str:
        made = f"`{g}` and `{name}` itself" if own else f"`{g}` (and `{d.name}`'s output is elementwise in `{name}`)"
        return (f"{rule_label(bwd, 'bwd')} returns `{self.quote(element, 40)}` as the cotangent of `{name}`, a "
                f"reduction over every axis of `{self.quote(operand, 40)}`, which is elementwise in {made}, so it "
                f"has at least `{name}`'s shape: the cotangent is a scalar however many entries `{name}` has, and "
                f"unless `{name}` is always a scalar, differentiating `{d.name}` may raise {SHAPE_ERROR}; return "
                f"it unreduced (or reduce only the axes broadcasting added, with `axis=`)")
