from __future__ import annotations

import ast
from typing import Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.model.semantic import FunctionNode
from vjplint.rules.base import Rule

# transformations that differentiate their function's positional arguments: those at `argnums`
# (0 by default), or every primal (jvp-like)
BY_ARGNUMS = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.jacfwd", "jax.hessian"})
EVERY_PRIMAL = frozenset({"jax.jvp", "jax.linearize", "jax.vjp"})
FIRST_ONLY = frozenset({"equinox.filter_grad", "equinox.filter_value_and_grad", "equinox.filter_jvp",
                        "equinox.filter_vjp"})


class EquinoxKeywordDifferentiated(Rule):
    """## What it does
    Flags a call of an `equinox.filter_custom_jvp` function that passes, by keyword, a value the
    enclosing function's transformation differentiates: `jax.grad(lambda w: f(x, w=w))`, or a
    function `g(w)` that calls `f(x, w=w)` and is passed to `jax.grad`/`jax.jacfwd`/`jax.jvp`/
    `eqx.filter_grad` with `w` among the differentiated arguments (census row E56).

    ## Why is this bad?
    `filter_custom_jvp` differentiates only its positional arguments; its keyword arguments are
    meant to be non-differentiable, and a tangent reaching one makes equinox raise (measured on
    JAX 0.10.2 with equinox 0.13.8, `fixtures/rules/VJP360/`):

        ValueError: Received keyword tangent

    ## Example
    ```python
    jax.grad(lambda w: f(x, w=w))(w0)
    ```

    ## Use instead
    ```python
    jax.grad(lambda w: f(x, w))(w0)   # w a positional parameter of f, with a tangent rule
    ```

    ## Fix safety
    No fix: the primal's signature and its jvp rule must take `w` positionally.
    """

    CODE = "VJP360"
    NAME = "equinox-keyword-differentiated"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"equinox"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import equinox as eqx
import jax
import jax.numpy as jnp

@eqx.filter_custom_jvp
def f(x, *, w):
    return jnp.sin(x) * w

g = jax.grad(lambda w: f(1.0, w=w))
''']
    VALID = ['''
import equinox as eqx
import jax
import jax.numpy as jnp

@eqx.filter_custom_jvp
def f(x, *, w):
    return jnp.sin(x) * w

g = jax.grad(lambda x: f(x, w=2.0))
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for site in d.call_sites:
            call, fn = site.call, site.enclosing
            if fn is None or call in self._done or not call.keywords:
                continue
            self._done.add(call)
            found = self._differentiated(fn)
            if found is None:
                continue
            names, transform = found
            for keyword in call.keywords:
                used = next((n.id for n in ast.walk(keyword.value) if isinstance(n, ast.Name) and n.id in names), None)
                if keyword.arg is None or used is None:
                    continue
                self.report(keyword.value, (
                    f"`{self.quote(call, 40)}` passes `{keyword.arg}=` a value computed from `{used}`, which "
                    f"`{transform}` differentiates, but equinox.filter_custom_jvp `{d.name}` differentiates only "
                    f"its positional arguments: equinox raises `ValueError: Received keyword tangent`; pass it "
                    f"positionally (with a tangent rule for it) or keep it out of the differentiated arguments"))
                break

    def _differentiated(self, fn: FunctionNode) -> Optional[Tuple[Set[str], str]]:
        """The parameters of `fn` that a transformation applied to it differentiates, with the
        transformation's name: `fn` a lambda given to it, or a def of the module passed by name."""
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        for call in self._transform_calls(fn):
            q = self.model.index.qualname(call.func) or ""
            if q in EVERY_PRIMAL:
                return set(params), q
            if q in FIRST_ONLY:
                return set(params[:1]), q
            argnums = next((k.value for k in call.keywords if k.arg == "argnums"), None)
            if argnums is None and len(call.args) > 1:
                argnums = call.args[1]
            if argnums is None:
                return set(params[:1]), q
            try:
                value = ast.literal_eval(argnums)
            except ValueError:
                return None  # argnums computed: not shown
            if isinstance(value, int):
                value = (value,)
            if isinstance(value, tuple):
                return {params[i] for i in value if isinstance(i, int) and 0 <= i < len(params)}, q
        return None

    def _transform_calls(self, fn: FunctionNode):
        parent = self.model.index.parent(fn)
        if isinstance(fn, ast.Lambda):
            if isinstance(parent, ast.Call) and parent.args and parent.args[0] is fn and self._is_transform(parent):
                yield parent
            return
        for call in self.model.index.of_type(ast.Call):
            assert isinstance(call, ast.Call)
            if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == getattr(fn, "name", None) \
                    and self._is_transform(call):
                yield call

    def _is_transform(self, call: ast.Call) -> bool:
        return (self.model.index.qualname(call.func) or "") in BY_ARGNUMS | EVERY_PRIMAL | FIRST_ONLY
