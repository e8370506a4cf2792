from __future__ import annotations

import ast
from typing import Set

from vjplint.diagnostics import Severity
from vjplint.facts.contract import LIST, NONE, TUPLE
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._primal_like import primal_like


class JvpPrimalOutStructure(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule whose primal output (the first element of the pair it returns)
    has another container structure than what the decorated function returns: a 1-tuple
    `(y,)` where the function returns one array `y`, one array where it returns a tuple, a
    tuple of another length. Structures are read as `VJP333` reads them (literals, names bound
    once, helpers, calls of the function itself, arithmetic on arrays:
    `vjplint/facts/contract.py`); a tuple against a list of the same length, and anything the
    code does not show, stay silent. Where the function's output is not shown, a 1-element
    container around a value made as the function makes its output (`(x,)` with `x =
    _raw_solve(...)` as the function returns `_raw_solve(...)`) is flagged: it never has that
    structure, whatever it is. So is a primal output of another length than the module unpacks
    the function's calls into (`U, s, Vt = f(a)` where `f` returns a library's `svd`), or one
    array for such an output.

    ## Why is this bad?
    The rule's primal output replaces the function's output under every transformation, so it
    must have the function's structure. Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e06_jvp_primal_tree.py`, census row E06 of
    `docs/facts/jax-errors.md`): when the function was traced before the rule (`grad(jit(f))`,
    `checkpoint`, a `scan` body) JAX raises

        TypeError: Custom JVP rule f_jvp for function f must produce a pair (list or tuple of
        length two) where the first element represents the primal output (equal in value to the
        output of the custom_jvp-decorated function f, and in particular of the same
        container/pytree structure), ...

    and otherwise the wrong structure silently becomes the function's output under `jvp` and
    `grad` (a scalar function then gives `grad` a tuple: "Gradient only defined for
    scalar-output functions").

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return (jnp.sin(x),), (jnp.cos(x) * t,)   # f returns one array
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), jnp.cos(x) * t
    ```

    ## Fix safety
    No fix: either the rule or the function must change, and the tangent follows.
    """

    CODE = "VJP338"
    NAME = "jvp-primal-out-structure"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return (jnp.sin(x),), (jnp.cos(x) * t,)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), jnp.cos(x) * t
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        expected = self.model.facts.primal_output(d)
        if expected is not None and expected.kind == NONE:
            return
        for reg in d.registrations:
            if reg.method != "defjvp":
                continue
            for rule in reg.rules:
                if rule.node is None or rule.is_none or rule.node in self._done:
                    continue
                self._done.add(rule.node)
                self._check_rule(d, rule, expected)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, expected) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)
        for _, value in self.model.facts.returns_of(fn):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2 or \
                    any(isinstance(e, ast.Starred) for e in value.elts):
                continue
            primal_expr = value.elts[0]
            if expected is None:
                if not self._unpacked_elsewhere(d, rule, fn, primal_expr):
                    self._wrapped_like_primal(d, rule, primal_expr)
                continue
            got = self.model.facts.structure(d, primal_expr, fn, {})
            if got is None or got.kind == NONE or got.same_as(expected):
                continue
            if got.kind in (TUPLE, LIST) and expected.kind in (TUPLE, LIST) and got.length == expected.length:
                continue  # a list for a tuple of the same length: not claimed
            evidence = f" ({expected.why})" if expected.why and expected.why != "a literal" else ""
            name = getattr(rule.called, "name", "<lambda>")
            self.report(primal_expr, (
                f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output "
                f"`{self.quote(primal_expr, 50)}`, {got.describe()}, but `{d.name}` returns "
                f"{expected.describe()}{evidence}: the rule's primal output replaces the function's output, so "
                f"`jax.grad(jax.jit({d.name}))` raises TypeError \"Custom JVP rule {name} for function {d.name} "
                "must produce a pair ... of the same container/pytree structure\" and `jvp`/`grad` otherwise "
                f"give `{d.name}` that structure; return the output with the function's structure "
                f"({expected.describe()}), and a tangent like it"))

    def _unpacked_elsewhere(self, d: CustomDerivative, rule: RuleFunction, fn, primal_expr: ast.expr) -> bool:
        """The module unpacks `d`'s calls into n names (`U, s, Vt = f(a)`), and the rule returns a
        primal output of another length (or one array): reported."""
        unpacked = self.model.facts.unpacked_output(d)
        got = self.model.facts.structure(d, primal_expr, fn, {})
        if unpacked is None or got is None or got.kind == NONE or (
                got.kind in (TUPLE, LIST) and got.length == unpacked[0]):
            return False
        count, where = unpacked
        self.report(primal_expr, (
            f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output "
            f"`{self.quote(primal_expr, 50)}`, {got.describe()}, but `{self.quote(where.targets[0], 30)} = "
            f"{self.quote(where.value, 30)}` (line {where.lineno}) unpacks `{d.name}`'s output into {count} values: "
            f"the rule's primal output replaces the function's output, so differentiating `{d.name}` breaks that "
            f"unpacking (and `jax.grad(jax.jit({d.name}))` raises TypeError \"Custom JVP rule ... must produce a "
            f"pair ... of the same container/pytree structure\"); return the output with the function's structure "
            f"({count} values), and a tangent like it"))
        return True

    def _wrapped_like_primal(self, d: CustomDerivative, rule: RuleFunction, primal_expr: ast.expr) -> None:
        """`return (x,), dx` with `x` made as the primal makes its output (its structure, whatever
        that is): the 1-element container around it never has the function's output structure."""
        if not (isinstance(primal_expr, (ast.Tuple, ast.List)) and len(primal_expr.elts) == 1):
            return
        why = primal_like(self.model, d, primal_expr.elts[0])
        if why is None:
            return
        name = getattr(rule.called, "name", "<lambda>")
        kind = "tuple" if isinstance(primal_expr, ast.Tuple) else "list"
        self.report(primal_expr, (
            f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output "
            f"`{self.quote(primal_expr, 50)}`, a 1-element {kind} around `{self.quote(primal_expr.elts[0], 30)}` "
            f"({why}, so it has `{d.name}`'s output structure): the container never has it, and the rule's primal "
            f"output replaces the function's output, so `jax.grad(jax.jit({d.name}))` raises TypeError \"Custom "
            f"JVP rule {name} for function {d.name} must produce a pair ... of the same container/pytree "
            f"structure\" and `jvp`/`grad` otherwise give `{d.name}` that structure; return "
            f"`{self.quote(primal_expr.elts[0], 30)}` itself, and a tangent like it"))
