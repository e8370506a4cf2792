from __future__ import annotations

import ast
import re
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import fixed_float_cast, rule_label

CARRY_ERROR = ("`TypeError: while_loop body function carry input and carry output must have equal types, but they "
               "differ`")


class BwdCotangentFixedDtype(Rule):
    """## What it does
    Flags a custom_vjp bwd rule that returns, as an argument's cotangent, a cast to a fixed
    float dtype: `g.astype(jnp.float32)`, `x.astype("float32")`, `jnp.asarray(ct, dtype=jnp.float32)`,
    `jnp.float32(ct)`. A cast to a dtype read from a value (`ct.astype(x.dtype)`, a dtype saved
    in the residuals) is what bwd should do, and stays silent, as does a cast nested inside
    other arithmetic.

    ## Why is this bad?
    A cotangent must have its argument's dtype. When the argument is float16 or bfloat16 (mixed
    precision), a bwd that upcasts "for a more precise backward pass" hands JAX a float32
    cotangent. Measured on JAX 0.10.2 (docs/facts/scripts/bwd_cotangent_dtype.py,
    jax-ml/jax#27144): `grad` silently returns a float32 gradient for the float16 input, and
    when the custom_vjp runs inside `lax.scan`, `fori_loop` or `while_loop`, `grad` raises

        TypeError: while_loop body function carry input and carry output must have equal
        types, but they differ: ...

    For a float32 argument the cast changes nothing, hence "may". (Saving `x.dtype` itself in
    the residuals raises `TypeError: Argument 'float16' ... is not a valid JAX type`: save `x`.)

    ## Example
    ```python
    def guard_bwd(_, g):
        return (g.astype(jnp.float32),)
    ```

    ## Use instead
    ```python
    def guard_fwd(x):
        return x, x            # a residual must be a JAX value: not `x.dtype` itself

    def guard_bwd(x, g):
        return (g.astype(jnp.float32).astype(x.dtype),)   # compute in float32, return x's dtype
    ```

    ## Fix safety
    No fix: which value carries the argument's dtype (`x`, or `g` when the output has the
    input's dtype) is the author's choice.
    """

    CODE = "VJP328"
    NAME = "bwd-cotangent-fixed-dtype"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    NEEDS = re.compile("float")  # every FLOAT_DTYPES name, as a string or an attribute

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def guard(x):
    return x

def guard_fwd(x):
    return x, None

def guard_bwd(_, g):
    return (g.astype(jnp.float32),)

guard.defvjp(guard_fwd, guard_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def guard(x):
    return x

def guard_fwd(x):
    return x, x

def guard_bwd(x, g):
    return (g.astype(jnp.float32).astype(x.dtype),)

guard.defvjp(guard_fwd, guard_bwd)
''']

    def check(self) -> None:
        facts = self.model.facts
        for d, _, bwd, params in self.model.facts.registered_bwds(lambda d: bool(facts.differentiable_names(d))):
            assert bwd.node is not None
            names = facts.differentiable_names(d) or ()
            for _, value in facts.returns_of(bwd.node):
                if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(names):
                    continue
                for element, name in zip(value.elts, names):
                    dtype = self._fixed_cast(element)
                    if dtype is not None:
                        self.report(element, self._message(d, bwd, element, name, dtype, params[-1]))

    def _fixed_cast(self, e: ast.expr) -> Optional[str]:
        return fixed_float_cast(self.model, e)

    def _message(self, d: CustomDerivative, bwd: RuleFunction, element: ast.expr, name: str, dtype: str,
                 g: str) -> str:
        return (f"{rule_label(bwd, 'bwd')} returns `{self.quote(element, 40)}`, cast to {dtype}, as the cotangent of "
                f"`{name}`, but a cotangent must have `{name}`'s dtype: unless `{name}` is always {dtype}, "
                f"differentiating `{d.name}` may return a {dtype} gradient for a lower- or higher-precision `{name}` "
                f"and, inside `lax.scan`, `fori_loop` or `while_loop`, raise {CARRY_ERROR}; cast it back to "
                f"`{name}`'s dtype (`.astype({name}.dtype)` with `{name}` saved in the residuals, not `{name}.dtype`, "
                f"which is not a JAX value; or `.astype({g}.dtype)` when the output has `{name}`'s dtype)")
