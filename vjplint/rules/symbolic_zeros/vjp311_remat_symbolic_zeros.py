from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.model.semantic import constant_value

# `custom_vjp.defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False)`
FLAG_POSITIONS = {"symbolic_zeros": 2, "optimize_remat": 3}


class RematSymbolicZeros(Rule):
    """## What it does
    Flags `defvjp(fwd, bwd, symbolic_zeros=True, optimize_remat=True)`: both flags provably
    true (literals or module constants, by keyword or position).

    ## Why is this bad?
    `custom_vjp.defvjp` refuses the combination when it is called, so the module (or the
    factory that registers the rule) fails before anything runs:

        NotImplementedError: remat optimization for custom_vjp does not support symbolic zeros

    ## Example
    ```python
    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True, optimize_remat=True)
    ```

    ## Use instead
    Keep the one you need. `optimize_remat=True` saves memory under `jax.checkpoint`;
    `symbolic_zeros=True` lets the rules skip work for unused inputs and outputs:
    ```python
    f.defvjp(f_fwd, f_bwd, optimize_remat=True)
    ```

    ## Fix safety
    No automatic fix: which flag to drop is a design decision (and `symbolic_zeros=True`
    changes what fwd and bwd receive).
    """

    CODE = "VJP311"
    NAME = "remat-symbolic-zeros"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax

@jax.custom_vjp
def f(x):
    return x

f.defvjp(lambda x: (x, None), lambda _, g: (g,), symbolic_zeros=True, optimize_remat=True)
''']
    VALID = ['''
import jax

@jax.custom_vjp
def f(x):
    return x

f.defvjp(lambda x: (x, None), lambda _, g: (g,), optimize_remat=True)
''']

    _seen: FrozenSet[ast.AST] = frozenset()  # the resolved registrations `check` saw: `visit_Call` skips them

    def check(self) -> None:
        seen: Set[ast.AST] = set()
        for d in self.model.derivatives:
            for reg in d.registrations:
                if reg.method == "defvjp" and isinstance(reg.node, ast.Call):
                    seen.add(reg.node)
                    if d.api == "jax":  # JAX's defvjp flags; other APIs' registrations take other arguments
                        self._check_call(reg.node, f"custom_vjp `{d.name}`", reg.keywords)
        self._seen = frozenset(seen)

    def visit_Call(self, node: ast.Call) -> None:
        """`defvjp` on a custom_vjp this module cannot resolve (imported, an attribute)."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "defvjp":
            if node not in self._seen:
                self._check_call(node, f"`{self.quote(func.value, 40)}`")

    def _check_call(self, call: ast.Call, what: str, keywords: Optional[Dict[str, ast.expr]] = None) -> None:
        """`keywords`: the registration's, a `**OPTS` dict of the module spread into them (the collector's)."""
        if any(isinstance(a, ast.Starred) for a in call.args) or \
                keywords is None and any(k.arg is None for k in call.keywords):
            return  # `*args`/`**kwargs` hide what is passed
        if keywords is None:
            keywords = {k.arg: k.value for k in call.keywords if k.arg}
        flags: Dict[str, ast.expr] = {}
        for name, position in FLAG_POSITIONS.items():
            expr = keywords.get(name, call.args[position] if position < len(call.args) else None)
            if expr is None or not self._truthy(expr):
                return
            flags[name] = expr
        self.report(call, f"`{self.quote(call.func, 40)}(...)` of {what} sets both symbolic_zeros and "
                          f"optimize_remat (`{self.quote(flags['symbolic_zeros'], 20)}`, "
                          f"`{self.quote(flags['optimize_remat'], 20)}`): JAX raises NotImplementedError \"remat "
                          f"optimization for custom_vjp does not support symbolic zeros\" at this call. "
                          f"Drop one of them")

    def _truthy(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Constant):
            return bool(expr.value)
        value = constant_value(self.model.index, expr)
        return isinstance(value, (bool, int)) and bool(value)
