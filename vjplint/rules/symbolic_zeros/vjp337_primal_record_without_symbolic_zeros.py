from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import constant_value
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label

# `custom_vjp.defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False)`: the flag's position
SYMBOLIC_ZEROS_POSITION = 2
TREE_VALUES = ("jax.custom_derivatives.custom_vjp_primal_tree_values",
               "jax._src.custom_derivatives.custom_vjp_primal_tree_values")


class PrimalRecordWithoutSymbolicZeros(Rule):
    """## What it does
    Flags a custom_vjp fwd rule that reads its arguments as `CustomVJPPrimal` records, calling
    `jax.custom_derivatives.custom_vjp_primal_tree_values` on them or reading a parameter's
    `.perturbed`, when its `defvjp` registration does not pass `symbolic_zeros=True` (the flag
    absent or a literal false, with no `**kwargs` that could hold it).

    ## Why is this bad?
    Only with `symbolic_zeros=True` does JAX pass fwd each differentiable argument as a
    `CustomVJPPrimal` (`.value`, `.perturbed`). Without the flag fwd receives the arrays
    themselves, and the record API fails when the function is differentiated. Measured on JAX
    0.10.2 (`docs/facts/scripts/errors/e28_primal_tree_values_unflagged.py`, census row E28 of
    `docs/facts/jax-errors.md`): `custom_vjp_primal_tree_values(x)` raises `TypeError:
    unexpected leaf type <class 'jax._src.literals.TypedFloat'>` under `jax.grad`, and
    `x.perturbed` an `AttributeError`. The usual cause is an edit that dropped the flag, or a
    fwd copied from a rule that had it.

    ## Example
    ```python
    def f_fwd(x):
        x = custom_vjp_primal_tree_values(x)
        return f(x), x

    f.defvjp(f_fwd, f_bwd)
    ```

    ## Use instead
    ```python
    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    ```
    (or drop the record API from fwd when bwd does not need to know which inputs are zero).

    ## Fix safety
    No fix: adding the flag also changes what bwd receives (symbolic zero cotangents), which
    bwd may not handle.
    """

    CODE = "VJP337"
    NAME = "primal-record-without-symbolic-zeros"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})
    INVALID = ['''
import jax
import jax.numpy as jnp
from jax.custom_derivatives import custom_vjp_primal_tree_values

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    x = custom_vjp_primal_tree_values(x)
    return f(x), x

def f_bwd(x, g):
    return (jnp.cos(x) * g,)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp
from jax.custom_derivatives import custom_vjp_primal_tree_values

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    x = custom_vjp_primal_tree_values(x)
    return f(x), x

def f_bwd(x, g):
    return (jnp.cos(x) * g,)

f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or fwd.node in self._seen or reg.method != "defvjp":
                continue
            if not isinstance(reg.node, ast.Call) or not self._flag_false(reg.node):
                continue
            self._seen.add(fwd.node)
            use = self._record_use(fwd)
            if use is None:
                continue
            self.report(use, (
                f"{rule_label(fwd, 'fwd')} of `{d.name}` reads its arguments as `CustomVJPPrimal` records "
                f"(`{self.quote(use, 50)}`), but `{d.name}.defvjp(...)` at line {reg.node.lineno} does not pass "
                "`symbolic_zeros=True`, so JAX hands fwd the arrays themselves: differentiating "
                f"`{d.name}` raises (`TypeError: unexpected leaf type` from `custom_vjp_primal_tree_values`, an "
                "AttributeError for `.perturbed`); pass `symbolic_zeros=True` to `defvjp` (bwd then receives "
                "symbolic zero cotangents too) or read the arguments directly"))

    def _flag_false(self, call: ast.Call) -> bool:
        """The registration provably leaves `symbolic_zeros` false."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return False
        expr: Optional[ast.expr] = next((k.value for k in call.keywords if k.arg == "symbolic_zeros"), None)
        if expr is None and len(call.args) > SYMBOLIC_ZEROS_POSITION:
            expr = call.args[SYMBOLIC_ZEROS_POSITION]
        if expr is None:
            return True
        value = expr.value if isinstance(expr, ast.Constant) else constant_value(self.model.index, expr)
        return value is False or value is None or value == 0

    def _record_use(self, fwd: RuleFunction) -> Optional[ast.expr]:
        fn = fwd.node
        assert fn is not None
        params = set(self.model.signature(fn).positional)
        for node in sorted(self.model.facts.own_nodes(fn), key=lambda n: (getattr(n, "lineno", 0),
                                                                            getattr(n, "col_offset", 0))):
            if isinstance(node, ast.Call) and self.model.index.qualname(node.func) in TREE_VALUES:
                return node
            if isinstance(node, ast.Attribute) and node.attr == "perturbed" and isinstance(node.value, ast.Name) \
                    and node.value.id in params:
                return node
        return None
