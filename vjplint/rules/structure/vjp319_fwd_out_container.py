from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Applicability, Fix, Severity
from vjplint.facts.structure import ARRAY, ELEMENT, describe
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label


class FwdOutContainer(Rule):
    """## What it does
    Flags a custom_vjp fwd rule whose primal output is a tuple where the decorated function
    returns a list of the same length, or a list where it returns a tuple. The containers are
    read from the values vjplint infers (literals, names bound to them, calls of module functions).

    ## Why is this bad?
    The pytree structures differ (a list is not a tuple). Measured on JAX 0.10.2
    (docs/facts/structure.md): plain `grad`, `jit(grad)` and `vmap(grad)` work, but `grad(jit(f))`
    and `grad` through `jax.checkpoint` inside `lax.scan` raise

        TypeError: Custom VJP fwd rule f_fwd for function f must produce a pair (list or tuple
        of length two) where the first element represents the primal output (equal to the
        output of the custom_vjp-decorated function f) ...

    so the function may fail once it is trained under a jitted loss or a rematerialised scan
    (cuEquivariance#162).

    ## Example
    ```python
    @jax.custom_vjp
    def pair(x):
        return [2.0 * x, x * x]

    def pair_fwd(x):
        return (2.0 * x, x * x), x
    ```

    ## Use instead
    ```python
    def pair_fwd(x):
        return [2.0 * x, x * x], x
    ```

    ## Fix safety
    Safe, when fwd's primal output is a literal: the fix writes it with the primal's container
    (`(a, b)` becomes `[a, b]`, or back), which is the value the primal returns anyway.
    """

    CODE = "VJP319"
    NAME = "fwd-out-container"
    SEVERITY = Severity.WARNING
    FIX = "match the primal's container"
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax

@jax.custom_vjp
def pair(x):
    return [2.0 * x, x * x]

def pair_fwd(x):
    return (2.0 * x, x * x), x

def pair_bwd(x, cts):
    a, b = cts
    return (2.0 * a + 2.0 * x * b,)

pair.defvjp(pair_fwd, pair_bwd)
''']
    VALID = ['''
import jax

@jax.custom_vjp
def pair(x):
    return [2.0 * x, x * x]

def pair_fwd(x):
    return [2.0 * x, x * x], x

def pair_bwd(x, cts):
    a, b = cts
    return (2.0 * a + 2.0 * x * b,)

pair.defvjp(pair_fwd, pair_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        primal = self.model.facts.primal_structure(d)
        if primal is None or primal[0][0] == ARRAY:
            return
        expected, why_primal = primal
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or not self.model.facts.registered_here(d, reg.node):
                continue
            for out in self.model.facts.fwd_outputs(d, fwd.node):
                got = out.structure
                if out.node in self._seen or got[0] in (ARRAY, ELEMENT) or got[0] == expected[0] or got[1] != expected[1]:
                    continue
                self._seen.add(out.node)
                message = (f"{rule_label(fwd, 'fwd')} returns {describe(got)} as its primal output ({out.why}), "
                           f"but {why_primal}, {describe(expected)}: the pytree structures differ, so "
                           f"differentiating `{d.name}` under `grad(jit(...))` or through `jax.checkpoint` in "
                           f"`lax.scan` may raise `TypeError: Custom VJP fwd rule ... must produce a pair ... "
                           f"(equal to the output of the custom_vjp-decorated function {d.name})` (plain `grad` "
                           f"works); return a {expected[0]} as fwd's primal output")
                self.report(out.node, message, fix=self._fix(out.expr, expected[0]))

    def _fix(self, expr: Optional[ast.expr], container: str) -> Optional[Fix]:
        if not isinstance(expr, (ast.Tuple, ast.List)) or not expr.elts:
            return None
        if any(isinstance(e, ast.Starred) for e in expr.elts):
            return None
        inner = self.model.source_text(expr.elts[0], expr.elts[-1])
        if "#" in inner:
            return None  # a comment could be lost: leave it to the author
        if container == "list":
            text = f"[{inner}]"
        else:
            text = f"({inner}{',' if len(expr.elts) == 1 else ''})"
        return self.replacing(expr, text, Applicability.SAFE, f"Return a {container}, as the primal does")
