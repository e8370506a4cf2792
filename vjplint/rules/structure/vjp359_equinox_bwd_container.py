from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label

EQX_ERROR = "`RuntimeError: custom_vjp gradients must have the same structure as equinox.filter(vjp_arg, ...)`"


class EquinoxBwdContainer(Rule):
    """## What it does
    Flags an `equinox.filter_custom_vjp` bwd (`def_bwd`) that returns a tuple, list or dict
    literal (`(ct,)`, `[ct]`, `ct, None`, a name bound to one) while the primal uses its first
    argument, `vjp_arg`, as one array (`jnp.sin(x)`, `x * w`, `x.shape`): census row E58's common
    static case. A warning: the structure JAX checks is the caller's value of `vjp_arg`.

    ## Why is this bad?
    Unlike `jax.custom_vjp`, whose bwd returns one cotangent per argument in a tuple, equinox's
    bwd returns the gradient of `vjp_arg` alone, with `vjp_arg`'s own pytree structure. A tuple
    (the JAX habit) for an array argument makes `jax.grad` of the function raise (measured on
    JAX 0.10.2 with equinox 0.13.8, `fixtures/rules/VJP359/`):

        RuntimeError: custom_vjp gradients must have the same structure as
        `equinox.filter(vjp_arg, equinox.is_inexact_array)`

    ## Example
    ```python
    @f.def_bwd
    def f_bwd(res, g, perturbed, x):
        return (jnp.cos(res) * g,)
    ```

    ## Use instead
    ```python
    @f.def_bwd
    def f_bwd(res, g, perturbed, x):
        return jnp.cos(res) * g
    ```

    ## Fix safety
    No fix: when `vjp_arg` really is a tuple of arrays, the tuple is right.
    """

    CODE = "VJP359"
    NAME = "equinox-bwd-container-for-array"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"equinox"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import equinox as eqx
import jax.numpy as jnp

@eqx.filter_custom_vjp
def f(x):
    return jnp.sin(x)

@f.def_fwd
def f_fwd(perturbed, x):
    return jnp.sin(x), x

@f.def_bwd
def f_bwd(res, g, perturbed, x):
    return (jnp.cos(res) * g,)
''']
    VALID = ['''
import equinox as eqx
import jax.numpy as jnp

@eqx.filter_custom_vjp
def f(x):
    return jnp.sin(x)

@f.def_fwd
def f_fwd(perturbed, x):
    return jnp.sin(x), x

@f.def_bwd
def f_bwd(res, g, perturbed, x):
    return jnp.cos(res) * g
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        rules = self.model.facts.equinox_rules(d)
        if rules is None or rules.bwd is None or rules.bwd.node is None or d.primal is None:
            return
        bwd = rules.bwd
        if bwd.node in self._seen:
            return
        self._seen.add(bwd.node)
        positional = self.model.signature(d.primal).positional
        if not positional:
            return
        name = positional[0]
        use = self.model.facts.used_as_array(d.primal, name)
        if use is None:
            return
        for ret in self.model.facts.returns_of(bwd.node):
            value = ret.value
            built = self._built(value) if value is not None else None
            if built is None:
                continue
            kind = {ast.Tuple: "a tuple", ast.List: "a list", ast.Dict: "a dict"}[type(built)]
            self.report(value, (
                f"{rule_label(bwd, 'bwd')} of equinox.filter_custom_vjp `{d.name}` returns `{self.quote(value, 40)}`, "
                f"{kind}, but equinox's bwd returns the gradient of `vjp_arg` alone, with its structure, and "
                f"`{d.name}` uses `{name}` (its `vjp_arg`) as one array (`{self.quote(use, 40)}`): unless callers pass "
                f"a {kind[2:]} there, `jax.grad` of `{d.name}` may raise {EQX_ERROR}; return the gradient of "
                f"`{name}` itself (not one cotangent per argument, as `jax.custom_vjp` takes)"))
            return

    def _built(self, value: ast.expr) -> Optional[ast.expr]:
        """`value` (or what a name bound once holds) when it is a tuple, list or dict literal."""
        if isinstance(value, ast.Name):
            bindings = self.model.index.lookup(value.id, self.model.index.scope_of(value))
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                value = bindings[0].value
        if isinstance(value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in value.elts):
            return value
        return value if isinstance(value, ast.Dict) else None
