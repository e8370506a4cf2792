from __future__ import annotations

import ast
from typing import Optional

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule

UNHASHABLE_CALLS = ("numpy.array", "numpy.asarray", "numpy.zeros", "numpy.ones", "jax.numpy.array",
                    "jax.numpy.asarray", "jax.numpy.zeros", "jax.numpy.ones", "builtins.list", "builtins.dict",
                    "builtins.set", "numpy.arange", "jax.numpy.arange")


class NondiffUnhashable(Rule):
    """## What it does
    Flags a list, dict, set or array passed (or defaulted) in a nondiff position. Off by
    default; enabled by `target = "vjp3"` or by selecting it.

    ## Why is this bad?
    JAX 0.10 accepts unhashable nondiff values, but the upcoming `jax_custom_vjp3`
    implementation requires them to be hashable, and lists, dicts, NumPy and JAX arrays then
    fail even when concrete.

    ## Example
    ```python
    f([0, 1], x)       # nondiff_argnums=(0,)
    ```

    ## Use instead
    ```python
    f((0, 1), x)
    ```

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP107"
    NAME = "nondiff-unhashable"
    SEVERITY = Severity.INFO
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    DEFAULT_ENABLED = False
    APIS = frozenset({"jax"})
    INVALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def pick(idx, x):
    return x[idx]

pick([0, 1], 1.0)
''']
    VALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def pick(idx, x):
    return x[idx]

pick((0, 1), 1.0)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        sig = d.signature
        for position, name in d.nondiff_names():
            default = sig.defaults.get(name) if sig else None
            if default is not None and self._unhashable(default):
                self.report(default, self._message(d.kind, d.name, name, default, "defaults to"))
            for site in d.call_sites:
                arg = self.model.facts.argument_at(site.call, position, name)
                if arg is not None and self._unhashable(arg):
                    self.report(arg, self._message(d.kind, d.name, name, arg))

    def _unhashable(self, node: ast.expr) -> Optional[str]:
        if isinstance(node, (ast.List, ast.ListComp)):
            return "a list"
        if isinstance(node, (ast.Dict, ast.DictComp)):
            return "a dict"
        if isinstance(node, (ast.Set, ast.SetComp)):
            return "a set"
        if isinstance(node, ast.Call) and self.model.index.qualname(node.func) in UNHASHABLE_CALLS:
            return "an array" if "numpy" in (self.model.index.qualname(node.func) or "") else "an unhashable value"
        return None

    def _message(self, kind: str, fname: str, name: str, node: ast.expr, verb: str = "receives") -> str:
        what = self._unhashable(node)
        return (f"nondiff `{name}` of custom_{kind} `{fname}` {verb} {what} (`{self.quote(node)}`): unhashable "
                f"nondiff values fail under jax_custom_{kind}3; pass a tuple or another hashable value")
