from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode
from vjplint.rules.symbolic_zeros._symbolic_zero_uses import Leaf, checks_tangent, raising_use, symbolic_zero_error, tangent_item
from vjplint.syntax.walk import walk


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
    tests check one tangent and use another that their callers always differentiate).

    ## Why is this bad?
    With `symbolic_zeros=True` the tangent of each input the caller does not differentiate
    reaches the rule as a `jax.custom_derivatives.SymbolicZero`, not an array of zeros
    (jax-ml/jax#14570). Arithmetic or a `jnp` call on it raises, e.g. `TypeError: unsupported
    operand type(s) for *: 'jaxlib._jax.ArrayImpl' and 'SymbolicZero'`, under `jax.grad(f,
    argnums=0)`, `jit(grad)`, `jax.jvp` or `jax.jacfwd` of a closure fixing the other input;
    differentiating every input (`argnums=(0, 1)`, `jax.jvp` with every tangent given) works.
    So the rule may fail depending on how it is called: a warning. Reading `.shape`/`.dtype`,
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
    SEVERITY = Severity.WARNING  # only callers that differentiate some inputs but not all fail
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
        leaves, slots, primal_names = self._leaves(nodes, tangents_param, primals_param)
        if not self._tangents_only_unpacked(nodes, tangents_param, parents):
            return  # the tuple goes whole into a call, a loop, a tree_map: a guard may be there
        if slots is None:
            slots = len(differentiable) if differentiable is not None else None
        names = primal_names or dict(enumerate(differentiable or ()))
        checked, guarded = self._guarded(nodes, tangents_param)
        if any(checks_tangent(c, leaves, tangents_param) for c in checked):
            return  # the author tells symbolic zeros apart: the inputs left unchecked are chosen
        found: List[Tuple[ast.AST, str, Leaf]] = []  # (the raising use, the tangent as shown, its leaf)
        for node in nodes:
            leaf, shown = self._leaf_of(node, leaves, tangents_param)
            if leaf is None or shown in guarded or (leaf.slot, None) in guarded:
                continue
            if not leaf.nested and (slots is None or slots < 2):
                continue  # a rule of one array input never receives a SymbolicZero (measured)
            if isinstance(node, ast.Name) and len(scope.bindings.get(node.id, [])) != 1:
                continue  # rebound: materialised, or not followed
            use = raising_use(self.model, node, parents)
            if use is not None:
                found.append((use, shown, leaf))
        if not found:
            return
        found.sort(key=lambda f: (f[0].lineno, f[0].col_offset))  # type: ignore[attr-defined]
        use, shown, leaf = found[0]
        others = sorted({s for _, s, _ in found[1:] if s != shown})
        of = names.get(leaf.slot)
        whose = (f" (a leaf of the tangent of `{of}`)" if leaf.nested else f" (the tangent of `{of}`)") if of else ""
        parts = f"leaves of `{of}`" if leaf.nested and of else "of its inputs"
        also = f"; so is {', '.join(f'`{o}`' for o in others)}" if others else ""
        flag_text = (f"`symbolic_zeros={self.quote(flag, 20)}`" if keyword else
                     f"`{self.quote(flag, 20)}` (defjvp's `symbolic_zeros`)")
        self.report(use, (
            f"{rule_label(rule, 'jvp rule')} of `{d.name}` is registered with {flag_text} at line {flag.lineno}, "
            f"so JAX passes it the tangent of each input the caller does not differentiate as a "
            f"`jax.custom_derivatives.SymbolicZero`, not an array; `{shown}`{whose} is used in "
            f"`{self.quote(use, 40)}` without a check{also}: this may raise {symbolic_zero_error(use)} when "
            f"the caller differentiates `{d.name}` with respect to some {parts} but not this one "
            f"(`jax.grad(..., argnums=...)`, or `jax.jvp`/`jax.jacfwd` with an input held fixed). Skip the "
            f"term when `isinstance({shown}, SymbolicZero)` (or use `jnp.zeros_like(...)` then), or drop "
            f"`symbolic_zeros=True`"))

    def _leaves(self, nodes: List[ast.AST], tangents: str, primals: str
                ) -> Tuple[Dict[str, Leaf], Optional[int], Dict[int, str]]:
        """Names bound to an input's tangent (or one leaf of it) by unpacking `tangents`; the number
        of inputs the unpacking shows (None when it does not); the primal names per input."""
        leaves: Dict[str, Leaf] = {}
        primal_names: Dict[int, str] = {}
        slots: List[Optional[int]] = [None]

        def unpack(target: ast.expr, slot: int, nested: bool) -> None:
            if isinstance(target, ast.Name):
                leaves[target.id] = Leaf(slot, nested)
            elif isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
                for element in target.elts:
                    unpack(element, slot, True)

        def bind(target: ast.expr, value: ast.expr) -> None:
            if isinstance(value, ast.Name) and value.id == tangents:
                if isinstance(target, (ast.Tuple, ast.List)) and not any(
                        isinstance(e, ast.Starred) for e in target.elts):
                    slots[0] = len(target.elts)
                    for i, element in enumerate(target.elts):
                        unpack(element, i, False)
                return
            if isinstance(value, ast.Name) and value.id == primals:
                if isinstance(target, (ast.Tuple, ast.List)):
                    for i, element in enumerate(target.elts):
                        if isinstance(element, ast.Name):
                            primal_names[i] = element.id
                return
            index = tangent_item(value, tangents)
            if index is not None:
                unpack(target, index, False)
                return
            if isinstance(value, ast.Name) and value.id in leaves and isinstance(target, (ast.Tuple, ast.List)):
                container = leaves.pop(value.id)  # `tx0, tx1 = tx`: a container's leaves are the tangents
                unpack(target, container.slot, True)
                return
            if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(
                    target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    bind(t, v)

        for node in sorted((n for n in nodes if isinstance(n, ast.Assign)), key=lambda n: (n.lineno, n.col_offset)):
            for target in node.targets:
                bind(target, node.value)
        return leaves, slots[0], primal_names

    def _tangents_only_unpacked(self, nodes: List[ast.AST], tangents: str, parents: Dict[ast.AST, ast.AST]) -> bool:
        """Whether `tangents` is only unpacked (`a, b = tangents`, `... = primals, tangents`) or
        indexed with a constant (`tangents[0]`); anything else (a call, a loop, a return of the
        whole tuple) may hold the guard."""
        for node in nodes:
            if not (isinstance(node, ast.Name) and node.id == tangents):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and tangent_item(parent, tangents) is not None:
                continue
            while isinstance(parent, (ast.Tuple, ast.List)):
                parent = parents.get(parent)
            if isinstance(parent, ast.Assign):  # in the value: the parameter is never a target (bound once)
                continue
            return False
        return True

    def _guarded(self, nodes: List[ast.AST], tangents: str) -> Tuple[List[ast.AST], Set[object]]:
        """The expressions the rule checks the type of (`isinstance(t, ...)`, `type(t)`,
        `t.__class__`), and the names (and `(slot, None)` for `tangents[i]`) read by those checks or
        by a test (`if`, `while`, conditional expression, `assert`)."""
        checked: List[ast.AST] = []
        guarded: Set[object] = set()

        def mark(expr: ast.AST) -> None:
            for sub in walk(expr):
                if isinstance(sub, ast.Name):
                    guarded.add(sub.id)
                index = tangent_item(sub, tangents)
                if index is not None:
                    guarded.add((index, None))

        for node in nodes:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "isinstance", "type") and node.args:
                checked.append(node.args[0])
                mark(node.args[0])
            elif isinstance(node, ast.Attribute) and node.attr == "__class__":
                checked.append(node.value)
                mark(node.value)
            elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                mark(node.test)
        return checked, guarded

    @staticmethod
    def _leaf_of(node: ast.AST, leaves: Dict[str, Leaf], tangents: str) -> Tuple[Optional[Leaf], str]:
        if isinstance(node, ast.Name) and node.id in leaves and isinstance(node.ctx, ast.Load):
            return leaves[node.id], node.id
        index = tangent_item(node, tangents)
        if index is not None:
            return Leaf(index, False), f"{tangents}[{index}]"
        return None, ""


