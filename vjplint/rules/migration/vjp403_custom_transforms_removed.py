from __future__ import annotations

import ast
import re
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.syntax.walk import walk

# The pre-2020 API and what replaces each (docs/facts/scripts/jax_removed_custom_transforms.py).
REPLACEMENT = {
    "custom_transforms": "decorate with `@jax.custom_vjp` and register `f.defvjp(fwd, bwd)`, or with "
                         "`@jax.custom_jvp` and register `f.defjvp(rule)`",
    "defvjp_all": "use `jax.custom_gradient` (its function returns `(out, vjp_fn)` as the old one did), or a "
                  "`jax.custom_vjp` with `f.defvjp(fwd, bwd)`",
    "defvjp": "use a `jax.custom_vjp` with `f.defvjp(fwd, bwd)`: fwd returns `(out, residuals)`, bwd one "
              "cotangent per argument",
    "defjvp_all": "use a `jax.custom_jvp` with `f.defjvp(rule)`: the rule keeps the "
                  "`(primals, tangents) -> (out, tangent_out)` form",
    "defjvp": "use a `jax.custom_jvp` with `f.defjvps(*rules)`: one rule per argument, `rule(tangent, ans, *args)`",
}
MODULES = ("jax", "jax.api")
# A guard that the old spelling is only tried: `try: ... except AttributeError`, `hasattr(jax, ...)`.
GUARD_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


class CustomTransformsRemoved(Rule):
    """## What it does
    Flags the custom-derivative API JAX had before `jax.custom_jvp` and `jax.custom_vjp`:
    `jax.custom_transforms`, `jax.defvjp_all`, `jax.defvjp`, `jax.defjvp_all` and `jax.defjvp`
    (however `jax` is imported, `jax.api.` included), and `from jax import custom_transforms`
    (or any of the others). Code that only tries the old name (inside `try: ... except
    AttributeError` or `ImportError`, or under `if hasattr(...)` or a version test) is not
    flagged, nor is an attribute of the same name on another object.

    ## Why is this bad?
    JAX deprecated this API in March 2020, when `custom_jvp` and `custom_vjp` arrived
    (jax-ml/jax#2026), and deleted it in JAX 0.2.12 (2021). On JAX 0.10.2 `jax.custom_transforms`
    raises `AttributeError: module 'jax' has no attribute 'custom_transforms'` and `from jax import
    defvjp_all` raises `ImportError: cannot import name 'defvjp_all' from 'jax'`, so the module
    no longer imports.

    ## Example
    ```python
    @jax.custom_transforms
    def clipped_identity(x):
        return x

    jax.defvjp_all(clipped_identity, lambda x: (x, lambda g: (jnp.clip(g, -1.0, 1.0),)))
    ```

    ## Use instead
    ```python
    @jax.custom_gradient
    def clipped_identity(x):
        return x, lambda g: (jnp.clip(g, -1.0, 1.0),)
    ```
    `defvjp` becomes a `jax.custom_vjp` with `defvjp(fwd, bwd)`; `defjvp_all` a `jax.custom_jvp`
    with `defjvp(rule)`; `defjvp`'s per-argument rules `f.defjvps(*rules)`.

    ## Fix safety
    No automatic fix: the rules change shape (per-argument rules become one fwd/bwd pair).
    """

    CODE = "VJP403"
    NAME = "custom-transforms-removed"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_transforms", b"defvjp", b"defjvp")
    INVALID = ['''
import jax

@jax.custom_transforms
def f(x):
    return x
''']
    VALID = ['''
import jax

@jax.custom_vjp
def f(x):
    return x

f.defvjp(lambda x: (x, None), lambda _, g: (g,))
''']

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.ctx, ast.Load) or node.attr not in REPLACEMENT:
            return
        q = self.model.index.qualname(node) or ""
        if q.rsplit(".", 1)[0] not in MODULES or self._guarded(node):
            return
        missing = "api" if q.startswith("jax.api.") else node.attr
        error = f"AttributeError: module 'jax' has no attribute '{missing}'"
        at_import = self.model.index.enclosing_function(node) is None
        self.report(node, self._message(f"`{self.quote(node)}`", node.attr, error, at_import))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module not in MODULES or self._guarded(node):
            return
        for alias in node.names:
            if alias.name in REPLACEMENT:
                error = (f"ImportError: cannot import name '{alias.name}' from 'jax'" if node.module == "jax"
                         else "ModuleNotFoundError: No module named 'jax.api'")
                self.report(self._positioned(node, alias), self._message(f"`from {node.module} import {alias.name}`", alias.name, error,
                                                 at_import=self.model.index.enclosing_function(node) is None))

    def _positioned(self, node: ast.ImportFrom, alias: ast.alias) -> ast.AST:
        """`alias` with its position: Python 3.9's `ast` gives aliases none, so it is found in the
        statement's text (after `import`, as a whole word), where 3.10+ would put it."""
        if hasattr(alias, "lineno"):
            return alias
        last = getattr(node, "end_lineno", None) or node.lineno
        pattern = re.compile(r"\b" + re.escape(alias.name) + (r"\s+as\s+" + re.escape(alias.asname) if alias.asname
                                                                   else "") + r"\b")
        for row in range(node.lineno, last + 1):
            line = self.model.lines[row - 1]
            start = line.find("import", line.find(node.module or "")) + len("import") if row == node.lineno else 0
            m = pattern.search(line, max(start, 0))
            if m is not None:
                at = ast.alias(name=alias.name, asname=alias.asname)
                at.lineno = at.end_lineno = row  # type: ignore[attr-defined]
                at.col_offset = len(line[:m.start()].encode("utf-8"))  # type: ignore[attr-defined]
                at.end_col_offset = len(line[:m.end()].encode("utf-8"))  # type: ignore[attr-defined]
                return at
        return node

    def _message(self, what: str, name: str, error: str, at_import: bool) -> str:
        when = ", so the module no longer imports" if at_import else " when this runs"
        return (f"{what} uses the custom-derivative API JAX deprecated when `custom_jvp`/`custom_vjp` arrived "
                f"(jax-ml/jax#2026) and deleted in JAX 0.2.12: on current JAX it raises `{error}`{when}. "
                f"To migrate, {REPLACEMENT[name]}")

    def _guarded(self, node: ast.AST) -> bool:
        """Inside `try:` with a handler for the missing name, or under an `if` testing `hasattr`
        or a version: the old spelling is a fallback, not the code path."""
        index = self.model.index
        child: ast.AST = node
        for ancestor in index.ancestors(node):
            if isinstance(ancestor, ast.Try) and child in ancestor.body and any(
                    _catches(h.type) for h in ancestor.handlers):
                return True
            if isinstance(ancestor, (ast.If, ast.IfExp)) and child is not ancestor.test and _version_test(
                    ancestor.test):
                return True
            child = ancestor
        return False


def _catches(expr: Optional[ast.expr]) -> bool:
    if expr is None:
        return True
    names = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    return any((n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else "") in GUARD_ERRORS
               for n in names)


def _version_test(test: ast.expr) -> bool:
    for n in walk(test):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("hasattr", "getattr"):
            return True
        if isinstance(n, (ast.Attribute, ast.Name)) and (getattr(n, "attr", None) or getattr(n, "id", "")) in (
                "__version__", "__version_info__", "version_info"):
            return True
    return False
