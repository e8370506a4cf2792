from __future__ import annotations

import ast
from typing import List, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.model.semantic import constant_value, named_function
from vjplint.rules.base import Rule

# `custom_vjp.defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False)`: the flag's position
OPTIMIZE_REMAT_POSITION = 3
REVERSE = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.vjp"})


class RematSecondOrder(Rule):
    """## What it does
    Flags reverse mode applied twice to a `jax.custom_vjp` registered with
    `defvjp(..., optimize_remat=True)`: `jax.grad(jax.grad(f))`, `jax.jacrev(jax.grad(f))`,
    `jax.grad(jax.value_and_grad(f))` and the like, written as nested calls on the custom
    function itself, through a name bound to the inner transform (`df = jax.grad(f)`), or with the
    inner one in the body of a lambda or a def the outer one differentiates, the inner one's
    function reaching the custom function through the module's defs, lambdas and partials (a
    Hessian-vector product: `grad` of `slope`, which sums `grad(loss)`, `loss` summing a model
    that calls it); in another module of
    the run, nested calls on it by name or a module-level alias (`jax.grad(jax.grad(mod.f))`),
    reported at its def.

    ## Why is this bad?
    `optimize_remat=True` makes JAX replace the rules by a remat-optimised pair that supports one
    level of reverse mode only (`custom_derivatives.py`: "remat optimization for custom_vjp does
    not support higher-order AD"). Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e27_remat_higher_order.py`, census row E27 of
    `docs/facts/jax-errors.md`): `grad(grad(f))`, `jacrev(grad(f))` and `jit(grad(grad(f)))`
    raise `ValueError: Linearization failed to produce known values for all output primals`,
    a message that names neither the flag nor the function; the same function registered
    without the flag gives the second derivative.

    ## Example
    ```python
    f.defvjp(f_fwd, f_bwd, optimize_remat=True)
    curvature = jax.grad(jax.grad(f))(x)
    ```

    ## Use instead
    ```python
    f.defvjp(f_fwd, f_bwd)          # second-order reverse mode works without the flag
    curvature = jax.grad(jax.grad(f))(x)
    ```

    ## Fix safety
    No fix: dropping the flag gives up the memory saving for first-order use too.
    """

    CODE = "VJP339"
    NAME = "remat-second-order"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return f(x), x

def f_bwd(x, g):
    return (jnp.cos(x) * g,)

f.defvjp(f_fwd, f_bwd, optimize_remat=True)
curvature = jax.grad(jax.grad(f))(1.0)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return f(x), x

def f_bwd(x, g):
    return (jnp.cos(x) * g,)

f.defvjp(f_fwd, f_bwd)
curvature = jax.grad(jax.grad(f))(1.0)
''']

    def check(self) -> None:
        self._remat: Set[CustomDerivative] = set()
        self._flags = {}
        for d in self.model.derivatives:
            if d.api != "jax" or d.kind != "vjp":
                continue
            for reg in d.registrations:
                flag = self._flag(reg.node) if reg.method == "defvjp" else None
                if flag is not None:
                    self._remat.add(d)
                    self._flags[d] = flag
        if not self._remat:
            return
        self._elsewhere()
        for node in self.model.facts.calls_in(self.model.module):  # the kept walk, not a new one
            if self._reverse(node):
                if not node.args:
                    continue
                for inner in self._inner_reverse(node.args[0]):
                    d = self._differentiated(inner)
                    if d in self._remat:
                        self._report(node, inner, d)
                        break

    def _elsewhere(self) -> None:
        """Reverse mode applied twice to a top-level one in another module of the run
        (`jax.grad(jax.grad(mod.f))`): reported at the def, with where."""
        for d in sorted(self._remat, key=lambda d: (d.anchor.lineno, d.anchor.col_offset)):
            uses = self.model.facts.transformed_elsewhere(d, "reverse_twice")  # by its name or an alias
            if uses:
                how, where = uses[0]
                flag = self._flags[d]
                self.report(d.anchor, (
                    f"at {where}, {how} applies reverse mode twice to custom_vjp `{d.name}`, registered with "
                    f"`optimize_remat=True` at line {flag.lineno}: the remat-optimised rules support one level of "
                    "reverse mode, and JAX 0.10.2 raises `ValueError: Linearization failed to produce known values "
                    "for all output primals` (naming neither the flag nor the function); drop "
                    f"`optimize_remat=True` from `{d.name}.defvjp(...)` where second derivatives are needed"))

    def _differentiated(self, inner: ast.Call) -> Optional[CustomDerivative]:
        """The custom_vjp the reverse-mode call `inner` differentiates: named, or reached through the
        module's defs, lambdas and partials calling it (`grad(loss)`, `loss` summing `model(x)`)."""
        d = self.model.facts.derivative_named(inner.args[0])
        if d is not None:
            return d
        argnums = next((k.value for k in inner.keywords if k.arg == "argnums"), None)
        try:
            value = ast.literal_eval(argnums) if argnums is not None else 0
        except ValueError:
            value = None
        positions = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, tuple) else None
        step = self.model.facts.forward_mode().reach(inner.args[0], positions)
        found = self.model.facts.reached(step) if step is not None else None
        return found if isinstance(found, CustomDerivative) else None

    def _inner_reverse(self, expr: ast.expr) -> List[ast.Call]:
        """The reverse-mode calls (with an argument) that the function `expr` applies: `expr` itself
        (`grad(f)`, or a name bound to it), or one in the body of a lambda or a def of this module
        it names (`lambda x: jax.value_and_grad(f)(x)[1]`)."""
        call = self._call_of(expr)
        if call is not None:
            return [call] if self._reverse(call) and call.args else []
        fn = expr if isinstance(expr, ast.Lambda) else named_function(self.model.index, expr)
        if fn is None:
            return []
        return [n for n in self.model.facts.own_nodes(fn)
                if isinstance(n, ast.Call) and self._reverse(n) and n.args]

    def _call_of(self, expr: ast.expr) -> Optional[ast.Call]:
        """`expr` itself when a call, or the call a name is bound to once (`df = jax.grad(f)`)."""
        if isinstance(expr, ast.Call):
            return expr
        if not isinstance(expr, ast.Name):
            return None
        for scope in (self.model.index.scope_of(expr), self.model.index.scopes.get(self.model.module)):
            bindings = scope.bindings.get(expr.id, []) if scope is not None else []
            if bindings:
                value = bindings[0].value if len(bindings) == 1 else None
                return value if isinstance(value, ast.Call) else None
        return None

    def _reverse(self, call: ast.Call) -> bool:
        return (self.model.index.qualname(call.func) or "") in REVERSE

    def _report(self, outer: ast.Call, inner: ast.Call, d: CustomDerivative) -> None:
        flag = self._flags[d]
        self.report(outer, (
            f"`{self.quote(outer.func, 20)}` of `{self.quote(inner, 40)}` applies reverse mode twice to custom_vjp "
            f"`{d.name}`, registered with `optimize_remat=True` at line {flag.lineno}: the remat-optimised rules "
            "support one level of reverse mode, and JAX 0.10.2 raises `ValueError: Linearization failed to "
            "produce known values for all output primals` (naming neither the flag nor the function); drop "
            f"`optimize_remat=True` from `{d.name}.defvjp(...)` where second derivatives are needed"))

    def _flag(self, call: ast.AST) -> Optional[ast.expr]:
        """The `optimize_remat` argument of a defvjp call when it is provably true."""
        if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        expr = next((k.value for k in call.keywords if k.arg == "optimize_remat"), None)
        if expr is None and len(call.args) > OPTIMIZE_REMAT_POSITION:
            expr = call.args[OPTIMIZE_REMAT_POSITION]
        if expr is None:
            return None
        value = expr.value if isinstance(expr, ast.Constant) else constant_value(self.model.index, expr)
        return expr if value is True else None
