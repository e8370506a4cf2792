from __future__ import annotations

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Applicability, Severity
from vjplint.rules.base import Rule


class DefvjpSwapped(Rule):
    """## What it does
    Flags `f.defvjp(bwd, fwd)`: the rules passed in the wrong order. The evidence is either
    the names (the first contains `bwd`/`backward` or ends in `_rev`, and the second contains
    `fwd`/`forward`), or the
    arities when both rules resolve in this file: the first accepts exactly the
    `len(nondiff) + 2` arguments bwd gets and not the primal's, and the second the reverse.

    ## Why is this bad?
    `defvjp` checks nothing, and eager calls, `jit` and `vmap` never run the rules, so the
    mistake surfaces only under grad, as a confusing error about the *bwd* function being
    called with the primal's arguments:

        TypeError: f_bwd() missing 1 required positional argument: 'g'

    When the arities happen to match, the gradient is silently garbage.

    ## Example
    ```python
    f.defvjp(f_bwd, f_fwd)
    ```

    ## Use instead
    ```python
    f.defvjp(f_fwd, f_bwd)
    ```

    ## Fix safety
    The fix swaps the two arguments. It is unsafe: the evidence is circumstantial (names or
    counts), so review it.
    """

    CODE = "VJP309"
    NAME = "defvjp-swapped"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    FIX = "swap the rules"

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    return (cos_x * g,)

f.defvjp(f_bwd, f_fwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    return (cos_x * g,)

f.defvjp(fwd=f_fwd, bwd=f_bwd)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        for _, fwd, bwd in self.model.facts.vjp_rules(d):
            if fwd is None or bwd is None:
                continue
            evidence = self.model.facts.swap_evidence(d, fwd, bwd)
            if evidence is None:
                continue
            first, last = sorted((fwd.expr, bwd.expr), key=lambda e: (e.lineno, e.col_offset))
            swapped = self.model.source_text(last) + self.model.text_between(first, last) + \
                self.model.source_text(first)
            given_fwd, given_bwd = self.quote(fwd.expr, 40), self.quote(bwd.expr, 40)
            self.report(first, f"`{d.name}.defvjp` gets `{given_fwd}` as fwd and `{given_bwd}` as bwd, which look "
                               f"swapped ({evidence}): defvjp takes (fwd, bwd), checks nothing, and the mistake "
                               f"shows only under grad, as a TypeError from calling `{given_fwd}` with the "
                               f"arguments of `{d.name}` (or as a silently wrong gradient when the counts "
                               f"happen to fit); swap them",
                        end_node=last,
                        fix=self.replacing(first, swapped, Applicability.UNSAFE, "Swap fwd and bwd", end_node=last))
