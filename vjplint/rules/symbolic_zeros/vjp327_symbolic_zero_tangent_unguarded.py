from __future__ import annotations

import ast
from typing import Dict, List, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode
from vjplint.rules.symbolic_zeros._symbolic_zero_uses import (Leaf, checks_tangent, guarded, leaf_of, leaves_of,
                                                               raising_use, symbolic_zero_error, tangents_only_unpacked)


class SymbolicZeroTangentUnguarded(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule registered with `symbolic_zeros=True` (`f.defjvp(rule,
    symbolic_zeros=True)`, or the decorator `@functools.partial(f.defjvp, symbolic_zeros=True)`)
    of a function of two or more differentiable inputs (or of a container argument unpacked in
    the rule) that computes with an input's tangent as if it were an array (an operand of
    arithmetic, an argument of a `jnp`/`lax`/`jax.nn`/`jax.scipy` function, an array method, an
    index) and never tells symbolic zeros apart: no `isinstance(t, SymbolicZero)`, `type(t) is
    SymbolicZero` or `t.__class__` on any tangent, and the tangent used is not rebound
    (materialised, e.g. with `zero_from_primal(x)`) nor read in an `if` test. A rule that checks
    some tangents is left alone: its author chose which inputs may arrive symbolic (JAX's own
    tests check one tangent and use another that their callers always differentiate). A rule
    that iterates over the tangents (`for t in tangents`, `enumerate`, `zip`) is judged when a
    call proves one of them a symbolic zero. Passing a tangent to a custom derivative or to
    `jax.jvp`/`jax.jit` (alone, in a tuple, or `*`-unpacked) counts as computing with it.

    ## Why is this bad?
    With `symbolic_zeros=True` the tangent of each input the caller does not differentiate
    reaches the rule as a `jax.custom_derivatives.SymbolicZero`, not an array of zeros
    (jax-ml/jax#14570). Arithmetic or a `jnp` call on it raises, e.g. `TypeError: unsupported
    operand type(s) for *: 'jaxlib._jax.ArrayImpl' and 'SymbolicZero'`, under `jax.grad(f,
    argnums=0)`, `jit(grad)`, `jax.jvp` or `jax.jacfwd` of a closure fixing the other input;
    differentiating every input (`argnums=(0, 1)`, `jax.jvp` with every tangent given) works.
    So whether the rule fails depends on its callers. When a call of the module passes a
    constant (a literal, a module-level array, `jax.random.PRNGKey(0)`) or leaves a default in one
    differentiable slot and a variable in another, differentiating that call runs the rule with
    that slot's tangent a `SymbolicZero`: an error (a closure or an input a `jax.grad(...,
    argnums=...)`/`jax.jvp` of the module does not differentiate counts as held fixed). When the
    function is private or local and the module's calls pass variables in every slot the rule
    computes with, JAX runs it with arrays and the rule is silent; when other code may call it (a
    public module-level function, one handed to a transform or stored), a warning that it may
    raise. Reading `.shape`/`.dtype`,
    `jnp.zeros_like(t)`, comparing with `==`, and returning a tangent unchanged all work; a rule
    of one array input never receives a `SymbolicZero` (measured in
    `docs/facts/scripts/hazard_symbolic_zero_tangent.py`).

    ## Example
    ```python
    @partial(gated.defjvp, symbolic_zeros=True)
    def gated_jvp(primals, tangents):
        (x, gate), (tx, tgate) = primals, tangents
        s = jax.nn.sigmoid(gate)
        return gated(x, gate), tx * s + x * s * (1.0 - s) * tgate
    ```

    ## Use instead
    ```python
    @partial(gated.defjvp, symbolic_zeros=True)
    def gated_jvp(primals, tangents):
        (x, gate), (tx, tgate) = primals, tangents
        s = jax.nn.sigmoid(gate)
        out_t = jnp.zeros_like(x)
        if not isinstance(tx, SymbolicZero):
            out_t = out_t + tx * s
        if not isinstance(tgate, SymbolicZero):
            out_t = out_t + x * s * (1.0 - s) * tgate
        return gated(x, gate), out_t
    ```
    (or drop `symbolic_zeros=True`: JAX then passes arrays of zeros).

    ## Fix safety
    No automatic fix: which terms to skip, or whether to drop the flag, is for the author.
    """

    CODE = "VJP327"
    NAME = "symbolic-zero-tangent-unguarded"
    SEVERITY = Severity.ERROR  # a warning where no call of the module shows an input held fixed
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def scaled(x, k):
    return x * k

def scaled_jvp(primals, tangents):
    (x, k), (tx, tk) = primals, tangents
    return scaled(x, k), tx * k + x * tk

scaled.defjvp(scaled_jvp, symbolic_zeros=True)
''']
    VALID = ['''
import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

@jax.custom_jvp
def scaled(x, k):
    return x * k

def scaled_jvp(primals, tangents):
    (x, k), (tx, tk) = primals, tangents
    out_t = jnp.zeros_like(x)
    if not isinstance(tx, SymbolicZero):
        out_t = out_t + tx * k
    if not isinstance(tk, SymbolicZero):
        out_t = out_t + x * tk
    return scaled(x, k), out_t

scaled.defjvp(scaled_jvp, symbolic_zeros=True)
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg, rule in self.model.facts.jvp_rules(d):
            if reg.method != "defjvp" or rule.node is None or rule.node in self._done:
                continue
            flagged, flag = self.model.facts.defjvp_symbolic_zeros(reg)
            if not flagged or flag is None:
                continue
            self._done.add(rule.node)
            keyword = reg.keywords.get("symbolic_zeros") is flag
            self._check_rule(d, rule, rule.node, flag, keyword)

    # -- the tangents and their leaves ------------------------------------------------------------
    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, fn: FunctionNode, flag: ast.expr,
                    keyword: bool) -> None:
        params = rule.effective_positional()
        if not params or len(params) < 2 or fn.args.vararg is not None:
            return
        primals_param, tangents_param = params[-2], params[-1]
        scope = self.model.index.scopes.get(fn)
        if scope is None or len(scope.bindings.get(tangents_param, [])) != 1:
            return  # the tangents tuple is rebound (materialised, mapped over): not followed
        nodes = self.model.facts.own_nodes(fn)
        parents: Dict[ast.AST, ast.AST] = {}
        for node in nodes:
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        differentiable = self.model.facts.differentiable_names(d)
        leaves, slots, primal_names = leaves_of(nodes, tangents_param, primals_param)
        if not tangents_only_unpacked(nodes, tangents_param, parents):
            return  # the tuple goes whole into a call, a loop, a tree_map: a guard may be there
        if slots is None:
            slots = len(differentiable) if differentiable is not None else None
        names = primal_names or dict(enumerate(differentiable or ()))
        checked, marked = guarded(nodes, tangents_param)
        if any(checks_tangent(c, leaves, tangents_param) for c in checked):
            return  # the author tells symbolic zeros apart: the inputs left unchecked are chosen
        zeros = self.model.facts.zero_tangent_calls(d)
        proven = {(z.slot, z.element): z for z in zeros.proven}
        found: List[Tuple[ast.AST, str, Leaf]] = []  # (the raising use, the tangent as shown, its leaf)
        for node in nodes:
            leaf, shown = leaf_of(node, leaves, tangents_param)
            if leaf is None or shown in marked or (leaf.slot, None) in marked:
                continue
            if leaf.slot < 0 and not proven:
                continue  # an element of the iterated tuple: only a call proving a symbolic zero tells
            if leaf.slot >= 0 and not leaf.nested and (slots is None or slots < 2):
                continue  # a rule of one array input never receives a SymbolicZero (measured)
            if isinstance(node, ast.Name) and len(scope.bindings.get(node.id, [])) > 1:
                continue  # rebound: materialised, or not followed
            use = raising_use(self.model, node, parents)
            if use is not None:
                found.append((use, shown, leaf))
        reached = [f for f in found if f[2].slot < 0 or (f[2].slot, -1) in proven or (f[2].slot, f[2].element) in proven]
        if reached:  # a call of the module makes this input's tangent a symbolic zero: it raises
            self._report(d, rule, reached, names, flag, keyword, proven)
        elif found and not zeros.visible:  # calls elsewhere may hold an input fixed
            self._report(d, rule, found, names, flag, keyword, {})
        # else every call of the module passes a variable in each slot the rule computes with:
        # JAX runs it with arrays there (what it does under a caller holding one fixed is not shown)

    def _report(self, d: CustomDerivative, rule: RuleFunction, found: List[Tuple[ast.AST, str, Leaf]],
                names: Dict[int, str], flag: ast.expr, keyword: bool, proven: Dict[Tuple[int, int], object]) -> None:
        found.sort(key=lambda f: (f[0].lineno, f[0].col_offset))  # type: ignore[attr-defined]
        use, shown, leaf = found[0]
        zero = proven.get((leaf.slot, -1)) or proven.get((leaf.slot, leaf.element)) if leaf.slot >= 0 else \
            next(iter(proven.values()), None)
        others = sorted({s for _, s, _ in found[1:] if s != shown})
        of = names.get(leaf.slot) if leaf.slot >= 0 else None
        whose = (f" (a leaf of the tangent of `{of}`)" if leaf.nested else f" (the tangent of `{of}`)") if of else ""
        if leaf.slot < 0:
            whose = " (each input's tangent in turn)"
        parts = f"leaves of `{of}`" if leaf.nested and of else "of its inputs"
        also = f"; so is {', '.join(f'`{o}`' for o in others)}" if others else ""
        flag_text = (f"`symbolic_zeros={self.quote(flag, 20)}`" if keyword else
                     f"`{self.quote(flag, 20)}` (defjvp's `symbolic_zeros`)")
        head = (f"{rule_label(rule, 'jvp rule')} of `{d.name}` is registered with {flag_text} at line {flag.lineno}, "
                f"so JAX passes it the tangent of each input the caller does not differentiate as a "
                f"`jax.custom_derivatives.SymbolicZero`, not an array; `{shown}`{whose} is used in "
                f"`{self.quote(use, 40)}` without a check{also}")
        advice = (f"Skip the term when `isinstance({shown}, SymbolicZero)` (or use `jnp.zeros_like(...)` then), "
                  f"or drop `symbolic_zeros=True`")
        if zero is not None:
            at = f"the call at {zero.where}"
            what = (f"{at} passes `{zero.passed}` as `{zero.param}`, which {zero.fixed_by} does not differentiate"
                    if zero.fixed_by else f"{at} passes `{zero.passed}`, a constant, as `{zero.param}`"
                    if zero.passed else f"{at} leaves `{zero.param}` to its default")
            self.report(use, (
                f"{head}, and {what}, beside a variable: when that call is differentiated the rule runs with "
                f"`{zero.param}`'s tangent a `SymbolicZero`, and this "
                f"raises {symbolic_zero_error(use)}. {advice}"))
            return
        self.report(use, (
            f"{head}: this may raise {symbolic_zero_error(use)} when "
            f"the caller differentiates `{d.name}` with respect to some {parts} but not this one "
            f"(`jax.grad(..., argnums=...)`, or `jax.jvp`/`jax.jacfwd` with an input held fixed). {advice}"),
            severity=Severity.WARNING)
