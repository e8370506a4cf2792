"""VJP509: check-grads could not run a custom derivative; the message says why."""

from __future__ import annotations

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class DerivativeNotChecked(Rule):
    """## What it does
    Reported by `vjplint check-grads`, never by linting, at a custom_vjp or custom_jvp it
    found but could not check, with the reason: the module does not import (the exception
    and line), no inputs could be synthesised (no annotation, call site, example or probed
    shape works), the function raises on them, no input domain decides (the primal is NaN or
    inf, or finite differences and the primal's own autodiff disagree, at every domain tried),
    a rule raises at assumed inputs where the primal's own autodiff fails too, it is defined
    inside another function, it has no floating-point argument or output, or the time limit
    ran out. An informational diagnostic: it never makes the run fail.

    ## Why is this bad?
    It is not a bug in the code; it is a hole in the evidence. A derivative that was not run
    was not proven, and the report says so rather than counting it as passed.

    ## Example
    ```python
    @jax.custom_vjp
    def apply(layer, x):  # what is `layer`? nothing says
        return layer(x)
    ```

    ## Use instead
    Name example inputs in `pyproject.toml`:
    ```toml
    [tool.vjplint.verify]
    examples = {"mypkg.ops.apply" = "mypkg.testing:apply_args"}
    ```
    or record the arguments your own tests pass (`vjplint check-grads --record -- pytest
    tests/`), or annotate the parameters (`x: Float[Array, "n"]`), or call the function at
    module level with literal arguments. `--ignore VJP509` hides these reports.

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP509"
    NAME = "derivative-not-checked"
    SEVERITY = Severity.INFO
    RUNTIME = True
    TRIGGERS = (b"custom_vjp", b"custom_jvp")

    INVALID = ['''
import jax

@jax.custom_vjp
def apply(layer, x):
    return layer(x)
''']
    VALID = ['''
import jax

@jax.custom_vjp
def apply(layer: float, x: float):
    return layer * x

apply.defvjp(lambda layer, x: (layer * x, (layer, x)), lambda r, g: (g * r[1], g * r[0]))
''']
