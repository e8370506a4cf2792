"""VJP503: the primal output of fwd or of the jvp rule differs from the function's (check-grads)."""

from __future__ import annotations

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class RulePrimalMismatch(Rule):
    """## What it does
    Reported by `vjplint check-grads`, never by linting: it compares the value a custom
    derivative returns when called normally (the primal function) with the primal output of
    its rule (the first element of fwd's pair for a custom_vjp, `jax.vjp(f, ...)[0]`; of the
    jvp rule's pair for a custom_jvp, `jax.jvp(f, ...)[0]`): tree structure, shapes, dtypes
    and values.

    ## Why is this bad?
    JAX runs the primal when nothing differentiates the function and the rule when something
    does, so the function's value changes with the context: a loss evaluated in a training
    step (under `grad`) differs from the same loss in evaluation. This happens when fwd
    re-implements the primal and the two drift apart after a refactor.

    ## Example
    ```python
    @jax.custom_vjp
    def softplus(x):
        return jnp.logaddexp(x, 0.0)

    def softplus_fwd(x):
        return jnp.log1p(jnp.exp(-x)), x  # lost the `+ x` term of the stable form

    softplus.defvjp(softplus_fwd, lambda x, g: (g * jax.nn.sigmoid(x),))
    ```

    ## Use instead
    ```python
    def softplus_fwd(x):
        return softplus(x), x  # fwd calls the primal: the two cannot drift apart
    ```

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP503"
    NAME = "rule-primal-mismatch"
    SEVERITY = Severity.ERROR
    RUNTIME = True
    TRIGGERS = (b"custom_vjp", b"custom_jvp")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)

softplus.defvjp(lambda x: (jnp.log1p(jnp.exp(-x)), x), lambda x, g: (g * jax.nn.sigmoid(x),))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)

softplus.defvjp(lambda x: (softplus(x), x), lambda x, g: (g * jax.nn.sigmoid(x),))
''']
