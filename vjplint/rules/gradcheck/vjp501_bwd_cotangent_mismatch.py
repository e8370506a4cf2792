"""VJP501: a custom_vjp's bwd rule gives cotangents that differ from finite differences (check-grads)."""

from __future__ import annotations

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class BwdCotangentMismatch(Rule):
    """## What it does
    Reported by `vjplint check-grads`, never by linting: it runs the custom_vjp on synthesised
    inputs (in a separate process, float64 where the backend has it) and compares the gradient
    its fwd/bwd rules give, `jax.grad` of a random linear function of the output, with central
    finite differences of the primal, argument by argument. Where the rules support it
    (`grad` of `grad` runs), the second-order derivative is compared the same way. A reverse
    pass that raises is reported too. The message names the argument, the measured maximum
    relative error and the inputs. The primal without its rule, differentiated by JAX, is a
    second reference: a rule that disagrees with both is an error; where only finite
    differences can judge and the inputs were assumed, the finding is a warning that says
    "may".

    ## Why is this bad?
    JAX trusts a custom rule completely: a bwd that returns `None` for an argument the output
    depends on, a cotangent off by a factor or with a sign error, or a formula that no longer
    matches a refactored primal gives wrong gradients silently. Training still runs; it just
    optimises the wrong thing.

    ## Example
    ```python
    @jax.custom_vjp
    def scaled(w, x):
        return w * x

    def scaled_fwd(w, x):
        return scaled(w, x), (w, x)

    def scaled_bwd(res, g):
        w, x = res
        return None, g * w  # `w` is used: its cotangent is not zero

    scaled.defvjp(scaled_fwd, scaled_bwd)
    ```
    `vjplint check-grads` reports: bwd cotangent for `w` differs from finite differences: max
    rel. error 1 at w=float64[3], x=float64[3].

    ## Use instead
    ```python
    def scaled_bwd(res, g):
        w, x = res
        return g * x, g * w
    ```

    ## Fix safety
    No automatic fix: only the author knows the intended derivative. A gradient transform (a
    primal that returns its argument unchanged, as in gradient clipping, scaling or reversal,
    and a straight-through estimator) is reported at severity info ("not compared with the true
    gradient"), never as a failure. Any other rule that is wrong on purpose is silenced with
    `# noqa: VJP501` on the definition's line.
    """

    CODE = "VJP501"
    NAME = "bwd-cotangent-mismatch"
    SEVERITY = Severity.ERROR
    RUNTIME = True
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax

@jax.custom_vjp
def scaled(w, x):
    return w * x

scaled.defvjp(lambda w, x: (w * x, (w, x)), lambda res, g: (None, g * res[0]))
''']
    VALID = ['''
import jax

@jax.custom_vjp
def scaled(w, x):
    return w * x

scaled.defvjp(lambda w, x: (w * x, (w, x)), lambda res, g: (g * res[1], g * res[0]))
''']
