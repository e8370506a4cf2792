from __future__ import annotations

import ast
from typing import Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.shapes import ShapeChange
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label

SHAPE_ERROR = ("`TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
               "dtypes. Expected float32[3,4] (tangent type of float32[3,4]) but got float32[12]`")


class JvpTangentShapeChanged(Rule):
    """## What it does
    Flags a custom_jvp rule whose tangent output (or a leaf of it paired with a primal output
    leaf) ends in an operation that changes its shape away from the primal output's: a
    flattening (`t.reshape(-1)`, `t.ravel()`, `jnp.ravel(t)`) or a transpose (`t.T`,
    `jnp.swapaxes(t, ...)`), or a reduction keeping a size-1 axis (`jnp.sum(t, axis=0,
    keepdims=True)`, a warning where neither the function nor the rule reduces anything with
    `keepdims=True` elsewhere), read through names bound once, dtype casts, negation and products
    with a number (a Python number as the tangent is VJP321's). An error where the primal
    output provably has two axes or more (it is made so, or is elementwise in an argument the
    code shows to have them, or every call of the function in the module passes it with one
    rank the code shows: a flattened tangent of a scalar output has shape (1,)), a warning ("may") where it has axes or the tangent was made with
    two axes before being flattened; a 1-D output, where both are no-ops, and a function that
    reshapes its own arguments stay silent, as does a transpose of a value whose layout its
    author chose (a product, `(a @ b).T`, or what a solver, a helper or a reshape returns).

    ## Why is this bad?
    JAX checks the tangent output's shape and dtype against the primal output's. Measured on
    JAX 0.10.2 (fixtures/rules/VJP353): `jvp`, `grad`, `jit(grad)` and `vmap(grad)` raise

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes. Expected float32[3,4] (tangent type of float32[3,4]) but got float32[12]

    and a transposed square tangent is silently wrong.

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (a_dot,) = primals, tangents
        return f(a), (a_dot @ a + a @ a_dot).reshape(-1)
    ```

    ## Use instead
    ```python
        return f(a), a_dot @ a + a @ a_dot
    ```

    ## Fix safety
    No fix: whether the shape change is a slip is the author's to say.
    """

    CODE = "VJP353"
    NAME = "jvp-tangent-shape-changed"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def square(a):
    return jnp.einsum("ij,jk->ik", a, a)

@square.defjvp
def square_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    return square(a), (a_dot @ a + a @ a_dot).reshape(-1)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def flat(a):
    return jnp.sin(a).reshape(-1)

@flat.defjvp
def flat_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    return flat(a), (jnp.cos(a) * a_dot).reshape(-1)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.primal is None or d.nondiff_unresolved:
            return
        facts = self.model.facts
        for reg, rule in facts.jvp_rules(d):
            if rule.node is None or rule.node in self._seen or not facts.registered_here(d, reg.node):
                continue
            self._seen.add(rule.node)
            for _, value in facts.returns_of(rule.node):
                if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2:
                    continue
                for out, tangent in facts.paired_leaves(value.elts[0], value.elts[1]):
                    self._check_leaf(d, rule, out, tangent)

    def _check_leaf(self, d: CustomDerivative, rule: RuleFunction, out: ast.expr, tangent: ast.expr) -> None:
        facts = self.model.facts
        change = facts.shape_change(tangent)
        if change is None or change.kind in ("atleast", "expand"):
            return  # axes added to a tangent: VJP352's cotangent reading, not followed here
        verdict = self._keepdims(d, rule) if change.kind == "keepdims" else self._verdict(d, out, change)
        if verdict is not None:
            severity, why = verdict
            op = "it" if change.op is tangent else f"`{self.quote(change.op, 40)}`"
            verb = "raises" if severity is Severity.ERROR else "may raise"
            self.report(tangent, (
                f"{rule_label(rule, 'jvp rule')} returns `{self.quote(tangent, 40)}` as the tangent of "
                f"`{self.quote(out, 30)}`: {op} {change.effect()}, but the tangent must have the primal output's "
                f"shape ({why}); differentiating `{d.name}` {verb} {SHAPE_ERROR}; drop the "
                f"{ {'flatten': 'flattening', 'transpose': 'transpose', 'keepdims': 'reduction'}[change.kind]}"),
                severity=severity)

    def _keepdims(self, d: CustomDerivative, rule: RuleFunction) -> Optional[Tuple[Severity, str]]:
        """A tangent reduced with `keepdims=True` where neither the function nor the rule makes any
        size-1 axis that way: the output keeps its axes, a length-1 one only where the input has it."""
        assert d.primal is not None and rule.node is not None
        own = {change.op for change in map(self.model.facts.shape_change, self._tangents(rule)) if change is not None}
        for fn in (d.primal, rule.node):
            if any(call not in own and any(k.arg == "keepdims" for k in call.keywords)
                   for call in self.model.facts.calls_in(fn)):
                return None  # the function reduces with keepdims itself: its output may have that axis
        return Severity.WARNING, (f"neither `{d.name}` nor the rule makes a size-1 axis with `keepdims=True` "
                                  f"elsewhere, so the output has it only if its input does")

    def _tangents(self, rule: RuleFunction):
        """The tangent outputs the rule returns (leaves paired with its primal outputs)."""
        assert rule.node is not None
        for _, value in self.model.facts.returns_of(rule.node):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2:
                yield from (t for _, t in self.model.facts.paired_leaves(value.elts[0], value.elts[1]))

    def _verdict(self, d: CustomDerivative, out: ast.expr, change: ShapeChange) -> Optional[Tuple[Severity, str]]:
        facts = self.model.facts
        assert d.primal is not None
        params = self.model.signature(d.primal).positional
        if change.kind == "transpose" and facts.layout_operand(change.operand):
            return None
        noop = "1-D" if change.kind == "flatten" else "1-D (or square, where it silently transposes the tangent)"
        made = facts.made_rank(out)
        if made is not None and made >= 2:
            return Severity.ERROR, f"`{self.quote(out, 30)}` is made with {made} axes, and this differs unless it is {noop}"
        if any(facts.reshaped_in(d.primal, p) is not None for p in params):
            return None  # the function reshapes its arguments: its output's shape is not theirs
        least, why = self._output_axes(d)
        if least >= 2:
            return Severity.ERROR, f"{why}, so it has two axes or more, and this differs unless it is {noop}"
        if least == 1:
            return Severity.WARNING, f"{why}, so it has axes, and this is a no-op only when it is {noop}"
        called = self._called_rank(d)
        if called is not None and (called[0] != 1 if change.kind == "flatten" else called[0] >= 2):
            return Severity.ERROR, f"{called[1]}, and this differs unless it is {noop}"
        before = facts.made_rank(change.operand)
        if change.kind == "flatten" and before is not None and before >= 2:
            return Severity.WARNING, (f"`{self.quote(change.operand, 30)}` is made with {before} axes, so unless the "
                                      f"output is 1-D the flattened tangent has another shape")
        return None

    def _called_rank(self, d: CustomDerivative) -> Optional[Tuple[int, str]]:
        """The output's exact rank where it has an argument's rank and every call of `d` in the
        module passes that argument with one rank the code shows (`f(jnp.sum(x * x))`: a scalar)."""
        assert d.primal is not None
        returns = [v for _, v in self.model.facts.returns_of(d.primal)]
        rank = self.model.facts.own_ranks(d.primal).of(returns[0]) if len(returns) == 1 and returns[0] is not None else None
        called = self.model.facts.called_rank(d, rank.base) if rank is not None and rank.base is not None else None
        if called is None or called[0] + rank.offset < 0:
            return None
        n = called[0] + rank.offset
        return n, (f"`{d.name}`'s output has the rank of `{rank.base}`" + (f" {rank.offset:+d}" if rank.offset else "") +
                   f", and every call of `{d.name}` here passes `{rank.base}` with rank {called[0]} "
                   f"(`{self.quote(called[1], 40)}`, line {called[1].lineno}), so the output has {n} ax{'is' if n == 1 else 'es'}")

    def _output_axes(self, d: CustomDerivative) -> Tuple[int, str]:
        """The least number of axes the primal output provably has, with why: elementwise in an
        argument the code shows to have axes (`jnp.sqrt(A)` with `A.shape[0]` read)."""
        assert d.primal is not None
        returns = [v for _, v in self.model.facts.returns_of(d.primal)]
        if len(returns) != 1 or returns[0] is None:
            return 0, ""
        rank = self.model.facts.own_ranks(d.primal).of(returns[0])
        if rank is None or rank.base is None:
            return 0, ""
        axes = self.model.facts.param_axes(d, rank.base)
        if axes is None:
            return 0, ""
        return axes.least + rank.offset, f"`{d.name}`'s output has the rank of `{rank.base}`" + \
            (f" {rank.offset:+d}" if rank.offset else "") + f", and {axes.why}"
