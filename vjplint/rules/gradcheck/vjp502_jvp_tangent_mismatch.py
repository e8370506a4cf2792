"""VJP502: a custom_jvp's rule gives tangents that differ from finite differences (check-grads)."""

from __future__ import annotations

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class JvpTangentMismatch(Rule):
    """## What it does
    Reported by `vjplint check-grads`, never by linting: it runs the custom_jvp on synthesised
    inputs and checks its rule in forward mode (the tangent output against central finite
    differences along a random direction, and its linearity: doubling the input tangents must
    double the output tangent), at orders 1 and 2 where the rule supports them, and in reverse
    mode (`jax.grad`, which transposes the rule) against finite differences per argument.

    ## Why is this bad?
    A custom_jvp rule is used for `jvp`, `grad`, `jacfwd`, `jacrev` and `hessian`. A tangent
    that is wrong, or not linear in the input tangents (a product of two tangents, a tangent
    added to a primal value), gives wrong derivatives in forward mode and, when JAX transposes
    it for reverse mode, wrong gradients or a failure far from the rule.

    ## Example
    ```python
    @jax.custom_jvp
    def product(x, y):
        return x * y

    @product.defjvp
    def product_jvp(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return x * y, dx * dy  # not linear in (dx, dy)
    ```

    ## Use instead
    ```python
    @product.defjvp
    def product_jvp(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return x * y, dx * y + x * dy
    ```

    ## Fix safety
    No automatic fix: only the author knows the intended derivative. A rule that is wrong on
    purpose is silenced with `# noqa: VJP502` on the definition's line.
    """

    CODE = "VJP502"
    NAME = "jvp-tangent-mismatch"
    SEVERITY = Severity.ERROR
    RUNTIME = True
    TRIGGERS = (b"custom_jvp",)

    INVALID = ['''
import jax

@jax.custom_jvp
def product(x, y):
    return x * y

product.defjvp(lambda p, t: (p[0] * p[1], t[0] * t[1]))
''']
    VALID = ['''
import jax

@jax.custom_jvp
def product(x, y):
    return x * y

product.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1] + p[0] * t[1]))
''']
