from __future__ import annotations

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class JvpNondiffArray(Rule):
    """## What it does
    Flags a `jax.custom_jvp` nondiff position that receives an array. Off by default (it is
    legal today and common in JAX itself); enabled by `target = "vjp3"` or by selecting it.

    ## Why is this bad?
    custom_jvp wraps every nondiff argument in `stop_gradient`, so any derivative flowing
    through it is silently zero: `grad` with respect to that argument returns `0.0` with no
    error. Under JAX's upcoming `jax_custom_jvp3` nondiff arguments must be static and hashable,
    and arrays fail.

    ## Example
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def scaled_sin(a, x):
        return a * jnp.sin(x)
    ```

    ## Use instead
    Make `a` a differentiable argument and give its tangent in the jvp rule.

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP106"
    NAME = "jvp-nondiff-array"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    DEFAULT_ENABLED = False
    INVALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def scaled_sin(a: jax.Array, x):
    return a * jnp.sin(x)
''']
    VALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def scaled_sin(axis: int, x):
    return jnp.sum(jnp.sin(x), axis=axis)
''']

    def check(self) -> None:
        for d in self.model.derivatives:
            if d.kind != "jvp":
                continue
            for v in self.model.facts.verdicts(d, self.options.hints):
                if v.level is None:
                    continue
                evidence = v.best("array")
                assert evidence is not None
                sig = d.signature
                assert sig is not None
                keyword = self.model.facts.nondiff_keyword(d, v.position)
                if v.level == "maybe":  # weaker or contradicted evidence: say so
                    against = v.contradictions()
                    contra = f", although it {against[0].reason}" if against else ""
                    self.report(sig.param_nodes[v.name],
                                f"`{v.name}` (position {v.position}) is in {keyword} of custom_jvp `{d.name}` and may "
                                f"be an array: it {evidence.reason}{contra}. If it is, custom_jvp stop-gradients it, so "
                                f"its derivative is silently zero, and it fails under jax_custom_jvp3. Make it a "
                                f"differentiable argument, or annotate it as a static type")
                    continue
                self.report(sig.param_nodes[v.name],
                            f"`{v.name}` (position {v.position}) is in {keyword} of custom_jvp `{d.name}` but "
                            f"{evidence.reason}: custom_jvp stop-gradients nondiff arguments, so its derivative is "
                            f"silently zero, and it fails under jax_custom_jvp3. Make it a differentiable argument")
