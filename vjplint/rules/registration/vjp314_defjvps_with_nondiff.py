from __future__ import annotations

import ast
from typing import List, Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule
from vjplint.model.semantic import constant_value


class DefjvpsWithNondiff(Rule):
    """## What it does
    Flags `f.defjvps(...)` on a `jax.custom_jvp` created with `nondiff_argnums` (or
    `nondiff_argnames` naming one of its parameters), and on an `equinox.filter_custom_jvp`.

    ## Why is this bad?
    `defjvps` (one tangent function per argument) does not support nondiff arguments, and says
    so when it is called, typically at import time:

        TypeError: Can't use ``defjvps`` with ``nondiff_argnums``.

    `equinox.filter_custom_jvp` has no `defjvps` at all: equinox raises `NotImplementedError:
    `equinox.filter_custom_jvp.defjvps` is not implemented` at the call (census row E57 of
    `docs/facts/jax-errors.md`); it is flagged too.

    ## Example
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def scale(n, x):
        return n * x

    scale.defjvps(lambda x_dot, out, n, x: n * x_dot)
    ```

    ## Use instead
    Write one `defjvp` rule, which receives the nondiff values first:
    ```python
    @scale.defjvp
    def scale_jvp(n, primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return scale(n, x), n * x_dot
    ```

    ## Fix safety
    No automatic fix: the per-argument tangent functions have to be merged by hand.
    """

    CODE = "VJP314"
    NAME = "defjvps-with-nondiff"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    KINDS = frozenset({"jvp"})

    INVALID = ['''
from functools import partial
import jax

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def scale(n, x):
    return n * x

scale.defjvps(lambda x_dot, out, n, x: n * x_dot)
''']
    VALID = ['''
import jax

@jax.custom_jvp
def mul(x, y):
    return x * y

mul.defjvps(lambda x_dot, out, x, y: x_dot * y, lambda y_dot, out, x, y: x * y_dot)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        evidence = self._nondiff_evidence(d)
        if evidence is None:
            return
        for reg in d.registrations:
            if reg.method != "defjvps":
                continue
            node = self._site(reg.node)
            shown = f"@{d.name}.defjvps" if reg.as_decorator else f"{d.name}.defjvps(...)"
            self.report(node, f"`{shown}` on custom_jvp `{d.name}`, which has {evidence}: JAX "
                              f"raises TypeError \"Can't use ``defjvps`` with ``nondiff_argnums``.\" at this "
                              f"call. Register one rule with `{d.name}.defjvp`, taking the nondiff values "
                              f"first: `(nondiff..., primals, tangents)`")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """`f.defjvps` on an `equinox.filter_custom_jvp` (which the model does not take as a
        registration: equinox registers with `def_jvp`)."""
        if node.attr != "defjvps":
            return
        d = self.model.facts.derivative_named(node.value)
        if d is None or d.api != "equinox":
            return
        self.report(node, f"`{self.quote(node, 40)}` on {d.label} `{d.name}`: equinox does not implement "
                          f"`defjvps` and raises NotImplementedError at this call; register one rule with `@{d.name}.def_jvp`, "
                          f"`def rule(primals, tangents, **kwargs)` returning `(out, t_out)`")

    def _nondiff_evidence(self, d: CustomDerivative) -> Optional[str]:
        """A description of d's nondiff arguments when JAX's set is provably non-empty."""
        names = [f"`{name}`" for _, name in d.nondiff_names()]
        if d.nondiff:
            return f"nondiff arguments ({', '.join(names)})" if names else "nondiff_argnums"
        node = d.keywords.get("nondiff_argnums")
        if node is None:
            return None
        if isinstance(node, (ast.Tuple, ast.List)) and node.elts:
            return f"nondiff_argnums=`{self.quote(node, 30)}`"  # any element makes JAX's set non-empty
        value = constant_value(self.model.index, node)
        if isinstance(value, (tuple, list)) and value:
            return f"nondiff_argnums=`{self.quote(node, 30)}`"
        return None

    @staticmethod
    def _site(node: ast.AST) -> ast.AST:
        """The call, or for `@f.defjvps` the decorator expression."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators: List[ast.expr] = node.decorator_list
            for dec in decorators:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if isinstance(target, ast.Attribute) and target.attr == "defjvps":
                    return dec
        return node
