from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule

CUSTOM_VMAP = "jax.custom_batching.custom_vmap"


class CustomVmapAroundVjp(Rule):
    """## What it does
    Flags `jax.custom_batching.custom_vmap` wrapped around a `jax.custom_vjp` function:
    `f = custom_vmap(f)` where `f` is a custom_vjp, or `@custom_vmap` stacked above
    `@jax.custom_vjp` on one `def`.

    ## Why is this bad?
    custom_vmap has no reverse-mode rule, and from the outside it hides the custom_vjp's fwd and
    bwd. Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_families.py`, section D): eager calls
    and `vmap` work, and `grad`, `jit(grad)` and `vjp` raise `ValueError: Linearization failed to
    produce known values for all output primals.` (jax-ml/jax#14150). The other order works: a
    custom_vjp whose primal and fwd call a custom_vmap function (`grad`, `vmap(grad)` OK).

    ## Example
    ```python
    @jax.custom_vjp
    def add(a, b):
        return a + b

    add.defvjp(add_fwd, add_bwd)
    add = custom_vmap(add)
    ```

    ## Use instead
    Put the custom_vjp outside: define the custom_vmap function first and call it from the
    custom_vjp's primal and fwd.

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP605"
    NAME = "custom-vmap-around-custom-vjp"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    INVALID = ['''
import jax
from jax.custom_batching import custom_vmap

@jax.custom_vjp
def add(a, b):
    return a + b

add.defvjp(lambda a, b: (a + b, None), lambda _, g: (g, g))
add = custom_vmap(add)
''']
    VALID = ['''
import jax
from jax.custom_batching import custom_vmap

@custom_vmap
def raw_add(a, b):
    return a + b

@jax.custom_vjp
def add(a, b):
    return raw_add(a, b)
''']

    def check(self) -> None:
        vjps = [d for d in self.model.derivatives if d.kind == "vjp" and d.api == "jax"]
        if not vjps or not self.model.holds("custom_vmap"):
            return  # a text test first: walking every node of every file costs more
        index = self.model.index
        # The calls spelled `custom_vmap(...)` and the decorated defs, from the index's tables (a
        # walk of every node cost the JAX tree's lint 10 ms); both kinds present: in walk order.
        calls = [n for n in index.of_type(ast.Call) if _last_name(n.func) == "custom_vmap"]
        defs = [n for n in index.of_type(ast.FunctionDef, ast.AsyncFunctionDef)
                if any(_last_name(d) == "custom_vmap" for d in n.decorator_list)]
        for node in index.nodes if calls and defs else calls or defs:
            if (isinstance(node, ast.Call) and _last_name(node.func) == "custom_vmap" and node.args
                    and index.qualname(node.func) == CUSTOM_VMAP):
                inner = self._vjp_named(node.args[0], node.lineno, vjps)
                if inner is not None:
                    self._report(node, f"`{self.quote(node, 40)}` wraps custom_vjp `{inner.name}` "
                                       f"(line {inner.anchor.lineno})", inner.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._stacked(node, vjps)

    def _stacked(self, fn: ast.FunctionDef, vjps: list) -> None:
        for position, dec in enumerate(fn.decorator_list):
            if _last_name(dec) != "custom_vmap" or self.model.index.qualname(dec) != CUSTOM_VMAP:
                continue
            below = [d for d in vjps if d.primal is fn and d.anchor in fn.decorator_list[position + 1:]]
            if below:
                self._report(dec, f"`@{self.quote(dec, 30)}` is stacked above the custom_vjp decorator of "
                                  f"`{fn.name}`", fn.name)

    def _vjp_named(self, arg: ast.expr, line: int, vjps: list) -> Optional[CustomDerivative]:
        if not isinstance(arg, ast.Name):
            return None
        scope = self.model.index.scope_of(arg)
        where = scope.node if scope.is_function else None
        earlier = [d for d in vjps if d.name == arg.id and d.anchor.lineno < line and d.enclosing is where]
        return earlier[-1] if earlier else None

    def _report(self, node: ast.AST, how: str, name: str) -> None:
        self.report(node, (
            f"{how}: custom_vmap has no reverse-mode rule and hides the custom_vjp's fwd and bwd, so `jax.grad`, "
            f"`jax.vjp` and `jit(grad)` of the result raise ValueError: Linearization failed to produce known "
            f"values for all output primals (jax-ml/jax#14150); eager calls and vmap work. Put the custom_vjp "
            f"outside: call the custom_vmap function from the custom_vjp's primal and fwd"))


def _last_name(expr: ast.expr) -> str:
    """`custom_vmap` for `custom_vmap` and `jax.custom_batching.custom_vmap` (a cheap test first)."""
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else ""
