from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import constant_value

# `custom_vjp.defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False)`: the flag's position
SYMBOLIC_ZEROS_POSITION = 2
ARRAY_FUNCTIONS = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "numpy.")
RECORD_FIELDS = ("value", "perturbed")


class SymbolicZerosRawPrimal(Rule):
    """## What it does
    Flags a custom_vjp fwd rule registered with `defvjp(..., symbolic_zeros=True)` (a literal or
    a module constant) that computes with a differentiable argument as if it were an array (an
    operand of arithmetic, or an argument of a `jnp`/`lax`/`jax.nn`/`jax.scipy`/`np` function)
    and never reads its `.value` or `.perturbed`.

    ## Why is this bad?
    With `symbolic_zeros=True`, JAX passes fwd every leaf of every differentiable argument as a
    `jax.custom_derivatives.CustomVJPPrimal` record (`.value` is the array, `.perturbed` says
    whether it is differentiated), not as the array. Arithmetic or a `jnp` call on the record
    fails under differentiation only (plain calls run the primal):

        TypeError: logaddexp requires ndarray or scalar arguments, got <class
        'jax._src.custom_derivatives.CustomVJPPrimal'> at position 0.

    The flag is typically copied from code that uses it, without the `.value` reads.

    ## Example
    ```python
    def f_fwd(x):
        return jnp.sin(x), jnp.cos(x)

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    ```

    ## Use instead
    ```python
    def f_fwd(x):
        return jnp.sin(x.value), jnp.cos(x.value)

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    ```
    (or drop `symbolic_zeros=True` when bwd does not need to know which inputs are zero).

    ## Fix safety
    No automatic fix: whether to read `.value` everywhere or to drop the flag (which also
    changes what bwd receives) is for the author to decide.
    """

    CODE = "VJP324"
    NAME = "symbolic-zeros-raw-primal"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    return (g * cos_x,)

f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x.value), jnp.cos(x.value)

def f_bwd(cos_x, g):
    return (g * cos_x,)

f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
''']

    def check(self) -> None:
        self._seen = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        nondiff = self.model.facts.nondiff_positions(d)
        if nondiff is None:
            return
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or fwd.node in self._seen or reg.method != "defvjp":
                continue
            flag = self._flag(reg.node)
            if flag is None:
                continue
            self._seen.add(fwd.node)
            keyword = any(k.value is flag for k in reg.node.keywords)  # type: ignore[attr-defined]
            shown = (f"`symbolic_zeros={self.quote(flag, 30)}`" if keyword else
                     f"`{self.quote(flag, 30)}` (defvjp's `symbolic_zeros`)")
            self._check_fwd(d, fwd, f"{shown} at line {flag.lineno}", nondiff)

    def _flag(self, call: ast.AST) -> Optional[ast.expr]:
        """The `symbolic_zeros` argument of a defvjp call when it is provably true."""
        if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return None
        expr = next((k.value for k in call.keywords if k.arg == "symbolic_zeros"), None)
        if expr is None and len(call.args) > SYMBOLIC_ZEROS_POSITION:
            expr = call.args[SYMBOLIC_ZEROS_POSITION]
        if expr is None:
            return None
        value = expr.value if isinstance(expr, ast.Constant) else constant_value(self.model.index, expr)
        return expr if value is True or (isinstance(value, int) and not isinstance(value, bool) and value) else None

    def _check_fwd(self, d: CustomDerivative, fwd: RuleFunction, flag: str, nondiff) -> None:
        fn = fwd.node
        sig = self.model.signature(fn)  # type: ignore[arg-type]
        if sig.vararg:
            return
        for position, name in enumerate(sig.positional):
            if position in nondiff:
                continue  # nondiff arguments reach fwd as they are
            use = self._array_use(fn, name)
            if use is None:
                continue
            self.report(use, f"{rule_label(fwd, 'fwd')} of `{d.name}` computes with `{name}` as an array "
                             f"(`{self.quote(use, 50)}`), but {flag} makes JAX "
                             f"pass fwd each differentiable argument as a `CustomVJPPrimal` record (`{name}.value`, "
                             f"`{name}.perturbed`): differentiating `{d.name}` raises a TypeError on the `CustomVJPPrimal` "
                             f"record; read `{name}.value`, or drop "
                             f"`symbolic_zeros=True`")
            return  # one finding per fwd: the same record reaches every use

    def _array_use(self, fn, name: str) -> Optional[ast.expr]:
        """The first place `fn` uses the parameter `name` as array data; None when `fn` reads one
        of the record's fields or binds `name` again."""
        index = self.model.index
        scope = index.scopes.get(fn)
        if scope is None or len(scope.bindings.get(name, [])) != 1 or name in scope.globals_ or name in scope.nonlocals:
            return None
        nodes = self.model.facts.own_nodes(fn)
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name \
                    and node.attr in RECORD_FIELDS:
                return None
        uses = []
        for node in nodes:
            if isinstance(node, ast.BinOp) and _is(node.left, name) or isinstance(node, ast.BinOp) and _is(
                    node.right, name) or isinstance(node, ast.UnaryOp) and _is(node.operand, name):
                uses.append(node)
            elif isinstance(node, ast.Call) and any(_is(a, name) for a in node.args) and (
                    index.qualname(node.func) or "").startswith(ARRAY_FUNCTIONS):
                uses.append(node)
        return min(uses, key=lambda n: (n.lineno, n.col_offset)) if uses else None


def _is(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name
