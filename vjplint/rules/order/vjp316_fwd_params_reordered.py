from __future__ import annotations

import ast
from typing import List

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.syntax.walk import walk


class FwdParamsReordered(Rule):
    """## What it does
    Flags a `jax.custom_vjp` fwd rule whose parameter names are the primal's parameter names
    in another order, e.g. primal `f(x, y)` and fwd `f_fwd(y, x)`.

    ## Why is this bad?
    JAX calls fwd positionally with the primal's arguments in the primal's order; fwd's
    parameter names play no part. With `f_fwd(y, x)`, fwd's `y` receives the caller's `x`. The
    code runs without any error, and `jax.grad`, `jax.value_and_grad` and `jax.vjp` return
    silently wrong values (under differentiation fwd's output *is* the function's value) and
    wrong gradients (the residuals hold the wrong arrays).

    ## Example
    ```python
    @jax.custom_vjp
    def f(x, y):
        return x * jnp.sin(y)

    def f_fwd(y, x):
        return x * jnp.sin(y), (x, y)
    ```

    ## Use instead
    ```python
    def f_fwd(x, y):
        return x * jnp.sin(y), (x, y)
    ```

    ## Fix safety
    No automatic fix: renaming the parameters changes the meaning of fwd's body, and only the
    author knows which reading was intended. A fwd whose body passes its parameters on in its
    own order (`f(y, x)` inside `f_fwd(y, x)`) is consistent and is not reported.
    """

    CODE = "VJP316"
    NAME = "fwd-params-reordered"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y):
    return x * jnp.sin(y)

def f_fwd(y, x):
    return x * jnp.sin(y), (x, y)

def f_bwd(res, g):
    x, y = res
    return g * jnp.sin(y), g * x * jnp.cos(y)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y):
    return x * jnp.sin(y)

def f_fwd(a, b):
    return a * jnp.sin(b), (a, b)

def f_bwd(res, g):
    a, b = res
    return g * jnp.sin(b), g * a * jnp.cos(b)

f.defvjp(f_fwd, f_bwd)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        sig = self.model.facts.primal_signature(d)
        if sig is None or sig.vararg:
            return
        for _, fwd, _ in self.model.facts.checked_vjp_rules(d):
            arity = self.model.facts.rule_arity(fwd)
            if fwd is None or fwd.node is None or arity is None or arity.vararg:
                continue
            names, primal = list(arity.names), sig.positional
            if len(primal) < 2 or names == primal or sorted(names) != sorted(primal):
                continue
            if len(set(names)) != len(names) or self._consistent_call(d, fwd, names):
                continue
            self._report(d, fwd, names, primal)

    def _report(self, d: CustomDerivative, fwd: RuleFunction, names: List[str], primal: List[str]) -> None:
        assert fwd.node is not None
        params = fwd.signature.param_nodes  # type: ignore[union-attr]
        first = next(i for i, (a, b) in enumerate(zip(names, primal)) if a != b)
        swapped = ", ".join(f"`{a}` receives the caller's `{b}`" for a, b in zip(names, primal) if a != b)
        self.report(params[names[first]],
                    f"{rule_label(fwd, 'fwd')} of custom_vjp `{d.name}` names its parameters "
                    f"`({', '.join(names)})`, the primal's `({', '.join(primal)})` in another order, but JAX calls "
                    f"fwd positionally with the primal's arguments: {swapped}, so values and gradients are "
                    f"silently wrong. Rename fwd's parameters to `({', '.join(primal)})` (and check its body)",
                    end_node=params[names[-1]])

    def _consistent_call(self, d: CustomDerivative, fwd: RuleFunction, names: List[str]) -> bool:
        """fwd's body calls the primal with its own parameters in its own order: the author
        read the parameters positionally, so the naming is odd but the values are right."""
        assert fwd.node is not None
        for node in walk(fwd.node):
            if isinstance(node, ast.Call) and self._is_primal(d, node.func):
                passed = [a.id if isinstance(a, ast.Name) else None for a in node.args]
                if passed == names:
                    return True
        return False

    def _is_primal(self, d: CustomDerivative, func: ast.expr) -> bool:
        if not isinstance(func, ast.Name):
            return False
        names = {d.name}
        if d.primal is not None and not isinstance(d.primal, ast.Lambda):
            names.add(d.primal.name)
        return func.id in names
