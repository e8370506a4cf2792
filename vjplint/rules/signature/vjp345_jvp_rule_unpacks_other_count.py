from __future__ import annotations

import ast
from typing import Iterator, List, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts import plural
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import constant_value
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label


class JvpRuleUnpacksOtherCount(Rule):
    """## What it does
    Checks that a `jax.custom_jvp` rule unpacks its `primals` and `tangents` tuples into as
    many names as JAX passes: one per positional parameter of the primal that is not in
    `nondiff_argnums`, parameters with defaults included (`x, = primals` for `f(x, scale=1.0)`),
    in `x, y = primals`, `(x, y), (tx, ty) = primals, tangents` or `primals[2]`.

    ## Why is this bad?
    JAX binds the call to the primal's signature with its defaults filled in and passes the rule
    one primal and one tangent for every positional parameter (nondiff ones excepted), so a
    parameter added to the primal (a `scale=1.0` with a default, which every call site still
    accepts) reaches the rule too. A rule that unpacks the old number fails the first time the
    function is differentiated (`jax.jvp`, `jax.grad`, `jax.jacfwd`), eager included, with a plain
    Python error far from the edit: `ValueError: too many values to unpack (expected 1)` (or
    `not enough values to unpack`, or `IndexError: tuple index out of range`). Eager calls, `jit`
    and `vmap` never run the rule, so the edit passes until then.

    ## Example
    ```python
    @jax.custom_jvp
    def f(x, scale=1.0):
        return jnp.sin(x) * scale

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), jnp.cos(x) * t
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x, scale), (t, t_scale) = primals, tangents
        return f(x, scale), jnp.cos(x) * scale * t + jnp.sin(x) * t_scale
    ```
    (or put `scale` in `nondiff_argnums` and take it as the rule's first parameter).

    ## Fix safety
    No fix: the rule's derivative with respect to the new parameter needs a human.
    """

    CODE = "VJP345"
    NAME = "jvp-rule-unpacks-other-count"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x, scale=1.0):
    return jnp.sin(x) * scale

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), jnp.cos(x) * t
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x, scale=1.0):
    return jnp.sin(x) * scale

@f.defjvp
def f_jvp(primals, tangents):
    (x, scale), (t, t_scale) = primals, tangents
    return f(x, scale), jnp.cos(x) * scale * t + jnp.sin(x) * t_scale
''']

    def check(self) -> None:
        reported = set()
        for d in self.model.derivatives:
            sig = d.signature
            nondiff = self.model.facts.nondiff_positions(d)
            if d.api != "jax" or d.kind != "jvp" or sig is None or sig.vararg or nondiff is None:
                continue
            diff = [p for i, p in enumerate(sig.positional) if i not in nondiff]
            for _, rule in self.model.facts.jvp_rules(d):
                if rule.node is None or rule.node in reported or rule.signature is None:
                    continue
                params = rule.signature.positional[rule.bound_positional:]
                if len(params) != len(nondiff) + 2 or rule.signature.vararg:
                    continue
                for node, what, count, error in self._mismatches(rule, params[-2], params[-1], len(diff)):
                    reported.add(rule.node)
                    self._report(d, rule, node, what, count, error, diff, sig.positional)
                    break

    def _mismatches(self, rule: RuleFunction, primals: str, tangents: str,
                    n: int) -> Iterator[Tuple[ast.AST, str, int, str]]:
        """(node, the tuple's name, how many it takes, the error) for each unpacking of the rule's
        `primals`/`tangents` parameters into another number of names than `n`."""
        assert rule.node is not None
        # Read up to the first line that binds the name again (`primals = (primals[0], ...)`).
        until = {primals: float("inf"), tangents: float("inf")}
        for node in self.model.facts.own_nodes(rule.node):
            if isinstance(node, ast.Name) and node.id in until and not isinstance(node.ctx, ast.Load):
                until[node.id] = min(until[node.id], node.lineno)
        for node in sorted((n for n in self.model.facts.own_nodes(rule.node) if isinstance(n, (ast.Assign, ast.Subscript))),
                           key=lambda n: (n.lineno, n.col_offset)):
            rebound = {name for name, line in until.items() if node.lineno >= line}
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                for target, value in _pairs(node.targets[0], node.value):
                    if not (isinstance(value, ast.Name) and value.id in (primals, tangents)
                            and value.id not in rebound and isinstance(target, (ast.Tuple, ast.List))):
                        continue
                    if any(isinstance(e, ast.Starred) for e in target.elts) or len(target.elts) == n:
                        continue
                    count = len(target.elts)
                    error = (f"ValueError: too many values to unpack (expected {count})" if count < n else
                             f"ValueError: not enough values to unpack (expected {count}, got {n})")
                    yield node, value.id, count, error
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                    node.value.id in (primals, tangents) and node.value.id not in rebound and \
                    isinstance(node.ctx, ast.Load):
                index = constant_value(self.model.index, node.slice)
                if type(index) is int and (index >= n or index < -n):
                    yield node, node.value.id, index + 1 if index >= 0 else -index, \
                        "IndexError: tuple index out of range"

    def _report(self, d: CustomDerivative, rule: RuleFunction, node: ast.AST, what: str, count: int, error: str,
                diff: List[str], positional: List[str]) -> None:
        defaulted = [p for p in diff if p in (d.signature.defaults if d.signature else {})]
        note = (f" (JAX fills in {', '.join(f'`{p}`' for p in defaulted)} from "
                f"{'its default' if len(defaulted) == 1 else 'their defaults'} and passes "
                f"{'it' if len(defaulted) == 1 else 'them'} too)") if defaulted else ""
        took = (f"reads `{self.quote(node, 30)}`" if isinstance(node, ast.Subscript)
                else f"unpacks `{what}` into {plural(count, 'name')}")
        self.report(node, f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` {took}, but JAX passes "
                          f"{plural(len(diff), 'value')} in `{what}`, one per positional parameter of `{d.name}` not "
                          f"in nondiff_argnums ({', '.join(diff)}){note}: differentiating `{d.name}` (jvp, grad, "
                          f"jacfwd) raises `{error}`. Unpack every parameter and give it a tangent term, or make "
                          f"the new parameter nondiff")


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[Tuple[ast.expr, ast.expr]]:
    """`(x,), (t,) = primals, tangents` pairs each target with its own value."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Tuple) and \
            len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)
    else:
        yield target, value

