from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.jaxapi import JAX_JVP, JAX_VJP, PARTIAL
from vjplint.rules.base import Rule


class CreatorAppliedTwice(Rule):
    """## What it does
    Flags `jax.custom_vjp` or `jax.custom_jvp` applied to a custom function that the same
    expression makes: two creator decorators on one `def` (a pasted `@jax.custom_vjp`, or
    `@partial(jax.custom_jvp, nondiff_argnums=...)` over itself, in any order and with other
    decorators between them), and the call form `jax.custom_vjp(jax.custom_vjp(f))`; a custom_jvp
    made of an anonymous custom_vjp too (a custom_vjp over a custom_jvp is VJP604's).

    ## Why is this bad?
    The outer custom function's primal is the inner one, which has no name: its rules can never be
    registered (`f.defvjp(...)` registers the outer one). A plain or jitted call evaluates the inner
    one, which raises (measured on JAX 0.10.2, `fixtures/rules/VJP351`; under `jax.grad` a
    custom_vjp's outer fwd runs instead, so a test of gradients alone can miss it):

        AttributeError: No VJP defined for custom_vjp function f using defvjp.

    (`No JVP defined for custom_jvp function f using defjvp.` for a custom_jvp).

    ## Example
    ```python
    @jax.custom_vjp
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(f_fwd, f_bwd)
    ```

    ## Use instead
    ```python
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(f_fwd, f_bwd)
    ```

    ## Fix safety
    No automatic fix: which of the two creators carries the intended `nondiff_argnums` is for the
    author.
    """

    CODE = "VJP351"
    NAME = "creator-applied-twice"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
''', '''
import jax
import jax.numpy as jnp

def _g(x):
    return jnp.sin(x)

f = jax.custom_jvp(jax.custom_jvp(_g))
f.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def inner(x):
    return jnp.sin(x)

inner.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
outer = jax.custom_vjp(inner)
outer.defvjp(lambda x: (inner(x), x), lambda x, g: (jnp.cos(x) * g,))
''']

    def check(self) -> None:
        for fn in self.model.index.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            if len(fn.decorator_list) < 2:  # one decorator cannot apply a creator twice: no name resolved
                continue
            made: List[Tuple[ast.expr, str]] = [(dec, k) for dec in fn.decorator_list for k in [self._kind(dec)] if k]
            if len(made) > 1 and not (made[0][1] == "vjp" and made[1][1] == "jvp"):  # that one: VJP604
                (outer, kind), (inner, inner_kind) = made[0], made[1]
                self._report(outer, f"`@{self.quote(outer, 50)}` (line {outer.lineno}) and `@{self.quote(inner, 50)}` "
                                    f"(line {inner.lineno}) both decorate `{fn.name}`", fn.name, inner_kind)
        for call in self.model.index.of_type(ast.Call):
            if not (call.args and isinstance(call.args[0], ast.Call)):  # the inner creator's call first: most calls have none
                continue
            kind = self._call_kind(call)
            if kind:
                inner_kind = self._call_kind(call.args[0])
                if inner_kind and not (kind == "vjp" and inner_kind == "jvp"):
                    made_of = call.args[0].args[0] if call.args[0].args else call.args[0]
                    self._report(call, f"`{self.quote(call, 60)}` applies the creator to the custom_{inner_kind} "
                                       f"`{self.quote(call.args[0], 40)}`", self.quote(made_of, 20), inner_kind)

    def _report(self, node: ast.AST, how: str, name: str, inner_kind: str) -> None:
        method = "defvjp" if inner_kind == "vjp" else "defjvp"
        self.report(node, (
            f"{how}: the outer custom function's primal is the inner custom_{inner_kind}, which has no name, so its "
            f"rules are never registered: a plain or jitted call raises `AttributeError: No {inner_kind.upper()} "
            f"defined for custom_{inner_kind} function {name} using {method}.` Apply the creator once"))

    def _kind(self, dec: ast.expr) -> str:
        """The kind a decorator makes: `@jax.custom_vjp`, `@partial(jax.custom_vjp, ...)`."""
        if isinstance(dec, ast.Call):
            return self._name_kind(dec.args[0]) if dec.args and self.model.index.qualname(dec.func) in PARTIAL else ""
        return self._name_kind(dec)

    def _call_kind(self, call: ast.Call) -> str:
        """The kind `call` makes from its first argument: `jax.custom_vjp(g, ...)`, `partial(jax.custom_vjp, ...)(g)`."""
        func: Optional[ast.expr] = call.func
        if isinstance(func, ast.Call) and func.args and self.model.index.qualname(func.func) in PARTIAL:
            func = func.args[0]
        return self._name_kind(func)

    def _name_kind(self, expr: ast.expr) -> str:
        q = self.model.index.qualname(expr)
        return "vjp" if q in JAX_VJP else "jvp" if q in JAX_JVP else ""
