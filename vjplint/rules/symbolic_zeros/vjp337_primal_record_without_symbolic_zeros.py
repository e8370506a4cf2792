from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import constant_value, named_function
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
    `.perturbed` or `.value` (when the primal does not read that parameter's own `.value`), or
    handing them to a helper of the module that does (census row E28), when its `defvjp` registration does not pass `symbolic_zeros=True` (the flag
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
            use = self._record_use(fwd, d, self._flag_names(reg.node))
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

    @staticmethod
    def _flag_names(call: ast.Call) -> Set[str]:
        """The name the registration passes as `symbolic_zeros` (a factory's own flag), if any."""
        expr = next((k.value for k in call.keywords if k.arg == "symbolic_zeros"), None)
        if expr is None and len(call.args) > SYMBOLIC_ZEROS_POSITION:
            expr = call.args[SYMBOLIC_ZEROS_POSITION]
        return {expr.id} if isinstance(expr, ast.Name) else set()

    def _record_use(self, fwd: RuleFunction, d: CustomDerivative, flags: Set[str]) -> Optional[ast.expr]:
        fn = fwd.node
        assert fn is not None
        positional = list(self.model.signature(fn).positional)
        params = set(positional)
        # A use under `if <the flag>:` runs only when the flag is on (`if symbolic_zeros: x = x.value`).
        guarded = {id(n) for b in ast.walk(fn) if isinstance(b, ast.If) and flags & {
            t.id for t in ast.walk(b.test) if isinstance(t, ast.Name)} for s in b.body for n in ast.walk(s)}
        for node in sorted(self.model.facts.own_nodes(fn), key=lambda n: (getattr(n, "lineno", 0),
                                                                            getattr(n, "col_offset", 0))):
            if id(node) in guarded:
                continue
            if isinstance(node, ast.Call) and self.model.index.qualname(node.func) in TREE_VALUES:
                return node
            if isinstance(node, ast.Attribute) and node.attr == "perturbed" and isinstance(node.value, ast.Name) \
                    and node.value.id in params:
                return node
            if isinstance(node, ast.Attribute) and node.attr == "value" and isinstance(node.value, ast.Name) \
                    and node.value.id in params and not self._primal_reads_value(d, positional.index(node.value.id)):
                return node
            if isinstance(node, ast.Call) and self._helper_record_use(node, params):
                return node
        return None

    def _primal_reads_value(self, d: CustomDerivative, index: int) -> bool:
        """Whether the primal reads `.value` of its own parameter at `index` (a record of its own,
        such as a NamedTuple with a `value` field): then fwd's `.value` is that field. Unknown: True."""
        if d.primal is None or isinstance(d.primal, ast.Lambda):
            return True
        positional = self.model.signature(d.primal).positional
        if index >= len(positional):
            return True
        name = positional[index]
        return any(isinstance(n, ast.Attribute) and n.attr == "value" and isinstance(n.value, ast.Name)
                   and n.value.id == name for n in ast.walk(d.primal))

    def _helper_record_use(self, call: ast.Call, params: Set[str]) -> bool:
        """fwd hands its arguments to a helper of the module that unwraps them as records
        (`custom_vjp_primal_tree_values` of its parameters, `.perturbed`)."""
        helper = named_function(self.model.index, call.func)
        if not isinstance(helper, ast.FunctionDef) or helper.decorator_list:
            return False
        if not any(isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) and a.value.id in params
                   or isinstance(a, ast.Name) and a.id in params for a in call.args):
            return False
        inner = {a.arg for a in (*helper.args.posonlyargs, *helper.args.args)}
        if helper.args.vararg is not None:
            inner.add(helper.args.vararg.arg)
        for node in ast.walk(helper):
            if isinstance(node, ast.Call) and self.model.index.qualname(node.func) in TREE_VALUES and any(
                    isinstance(n, ast.Name) and n.id in inner for a in node.args for n in ast.walk(a)):
                return True
            if isinstance(node, ast.Attribute) and node.attr == "perturbed" and isinstance(node.value, ast.Name) \
                    and node.value.id in inner:
                return True
        return False
