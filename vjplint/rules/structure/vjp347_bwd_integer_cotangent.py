from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._cotangent_leaves import elements, leaves, returned_values

JAX_ERROR = ("`TypeError: lax.mul requires arguments to have the same dtypes, got float32, int32` (or `mul does "
             "not accept dtype bool`)")
_INT_ANNOTATIONS = frozenset({"int", "bool", "Int", "Bool", "Integer", "UInt", "Int32", "Int64", "UInt32", "UInt8",
                              "Int8"})


class BwdIntegerCotangent(Rule):
    """## What it does
    Flags a custom_vjp bwd rule that returns, as (a leaf of) a differentiable argument's
    cotangent, a value the code shows to be an integer or boolean array: a cast to an integer
    dtype (`g.astype(jnp.int32)`, `.astype(int)`, `jnp.int32(g)`, `lax.convert_element_type(g,
    jnp.int32)`, `jnp.asarray(g, dtype=jnp.int32)`, `jnp.round(g).astype(int)`), a comparison
    (`g > 0`), `argmax`, arithmetic or a name holding one, what a function of the module returns.
    It reads the cotangent through a returned name, a helper bwd delegates to (`return
    _bwd(res, g)`), and the leaves of a nested tuple, a dict, a NamedTuple or dataclass, or
    `tree_map(lambda c: c.astype(int), ct)`. An argument annotated `int` or `bool`, or one a
    call of the module passes an integer (`f(x, jnp.argmax(x))`), stays silent (JAX throws its
    cotangent away), as do `None`, literals, and casts to a dtype read
    from a value (`.astype(x.dtype)`).

    ## Why is this bad?
    JAX checks a cotangent's shape against its argument's, but lets another dtype through for
    a float argument (`_temporary_dtype_exception` in `custom_derivatives.py`), so the integer
    cotangent flows on into the rest of the backward pass. Measured on JAX 0.10.2
    (fixtures/rules/VJP347): the first operation that meets it raises

        TypeError: lax.mul requires arguments to have the same dtypes, got float32, int32.

    (`mul does not accept dtype bool` for a comparison), and where nothing follows, `grad`
    returns an integer "gradient" (`[1 1 1]`: every fraction truncated). Under `jit` the same
    TypeError is raised.

    ## Example
    ```python
    def step_bwd(x, g):
        return (jnp.round(g / (1.0 + jnp.abs(x))).astype(jnp.int32),)
    ```

    ## Use instead
    ```python
    def step_bwd(x, g):
        return (jnp.round(g / (1.0 + jnp.abs(x))),)   # keep the cotangent's float dtype
    ```

    ## Fix safety
    No fix: whether to drop the cast or cast to the argument's dtype is the author's choice.
    """

    CODE = "VJP347"
    NAME = "bwd-integer-cotangent"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def step(x):
    return jnp.round(x)

def step_fwd(x):
    return step(x), x

def step_bwd(x, g):
    return (g.astype(jnp.int32),)

step.defvjp(step_fwd, step_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def step(x):
    return jnp.round(x)

def step_fwd(x):
    return step(x), x

def step_bwd(x, g):
    return (jnp.round(g).astype(x.dtype),)

step.defvjp(step_fwd, step_bwd)
''']

    def check(self) -> None:
        facts = self.model.facts
        integers = facts.integers()
        for d, _, bwd, _ in facts.registered_bwds(lambda d: bool(facts.differentiable_names(d))):
            assert bwd.node is not None
            names = facts.differentiable_names(d) or ()
            for value, _ in returned_values(self.model, bwd.node):
                found = elements(self.model, value)
                if found is None or len(found) != len(names):
                    continue
                for element, name in zip(found, names):
                    # the first integer leaf, then whether the argument is one (what the module's calls pass)
                    for leaf in leaves(self.model, element):
                        if isinstance(leaf, ast.Constant):
                            continue
                        why = integers.evidence(leaf)
                        if why is None or facts.from_caller(why):
                            continue
                        if not self._integer_argument(d, name):
                            self.report(leaf, self._message(d, bwd, leaf, element, name, facts.shown(why)))
                        break

    def _integer_argument(self, d: CustomDerivative, name: str) -> bool:
        """The primal's parameter `name` is annotated as an integer or a boolean, or a call of the
        custom function in the module passes one there (JAX then throws its cotangent away)."""
        if d.primal is None or isinstance(d.primal, ast.Lambda):
            return False
        sig = d.signature
        if sig is not None and name in sig.positional:
            passed = self.model.facts.calls_pass(d, sig.positional.index(name))
            if any(self.model.facts.integers().evidence(arg) is not None for arg in passed.arguments):
                return True
        arg = next((a for a in [*d.primal.args.posonlyargs, *d.primal.args.args] if a.arg == name), None)
        annotation: Optional[ast.expr] = arg.annotation if arg is not None else None
        if annotation is None:
            return False
        base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
        tail = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
        return tail in _INT_ANNOTATIONS or self.model.facts.integers().int_dtype(annotation) is not None

    def _message(self, d: CustomDerivative, bwd: RuleFunction, leaf: ast.expr, element: ast.expr, name: str,
                 why: str) -> str:
        part = "" if leaf is element else f" in `{self.quote(element, 40)}`"
        return (f"{rule_label(bwd, 'bwd')} returns `{self.quote(leaf, 40)}`{part} as the cotangent of `{name}`, an "
                f"integer or boolean array (the code shows {why}): JAX lets a cotangent of another dtype through for a float "
                f"argument, and differentiating `{d.name}` then raises {JAX_ERROR} in the next operation, or returns "
                f"an integer gradient with every fraction truncated; return a cotangent of `{name}`'s dtype (drop "
                f"the cast, or `.astype({name}.dtype)` with `{name}` saved in the residuals), or `None` for no "
                f"gradient")
