from __future__ import annotations

import ast

from vjplint.diagnostics import Severity
from vjplint.rules.transforms._checkify import (Checkify, CheckifiesJitted, DecoratedStaged, DifferentiatedJitted, Hit, StagedAround,
                                    StagedLater)
from vjplint.rules.base import Rule

FOREACH = "ValueError: foreach() argument 2 is shorter than argument 1"


class StagedCheckifyCustomDerivative(Rule):
    """## What it does
    Flags `jax.experimental.checkify.checkify` composed with a staging wrapper around a
    `jax.custom_vjp` or `jax.custom_jvp` function of this module when checkify has a check to put
    before or inside it: `jax.jit(checkify(f, errors=...))` (also `jax.checkpoint`, a name bound to
    the checkify call and jitted later, `@jax.jit` stacked above `@checkify.checkify`), and
    `checkify(jax.jit(f))` or a checkified function calling a jitted function that reaches `f`. The
    checkified function may be `f` itself or a function of the module that calls it. A check is
    what the `errors` set adds: under `nan_checks`/`float_checks`/`all_checks` any arithmetic that
    can produce a NaN (`+`, `*`, `jnp.log`, `jnp.sum`...), under `div_checks` a division, under
    `index_checks` a computed index (`x[jnp.argmax(x)]`, `.at[...]`, `jnp.take`), and under
    `user_checks` (the default) a `checkify.check` call. For a custom_vjp the check may be in its
    primal or anywhere before the call; for a custom_jvp only in its primal. A jitted function that
    calls a checkified function is reported where it is differentiated (`jax.grad` of it, or of a
    function calling it). A checkified function that takes a gradient itself (a training step) is
    not reported, nor is an `errors` set that is not statically known.

    ## Why is this bad?
    Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_checkify_custom_vjp.py`): eager calls,
    `jit` and `vmap` work, but `jax.grad`, `jax.value_and_grad`, `jax.vjp`, `jax.jacrev` (also under
    an outer `jax.jit`), and `jax.jvp` of the result raise

        ValueError: foreach() argument 2 is shorter than argument 1

    (jax-ml/jax#35871: the maintainers chose to make checkify skip custom_vjp functions rather than
    fix the composition). The same composition without the jit works, and so does one whose checks
    all come after the custom_vjp call, or whose errors set adds no check.

    ## Example
    ```python
    checked = jax.jit(checkify.checkify(log_cosh, errors=checkify.float_checks))
    loss = lambda x: jnp.sum(checked(x)[1])
    jax.grad(loss)(x)
    ```

    ## Use instead
    Differentiate inside checkify, or inside the jit:
    ```python
    checked_grad = jax.jit(checkify.checkify(jax.grad(lambda x: jnp.sum(log_cosh(x))),
                                             errors=checkify.float_checks))
    err, g = checked_grad(x)
    ```
    (`jax.jit(jax.grad(lambda x: jnp.sum(checkify.checkify(log_cosh, errors=...)(x)[1])))` works too.)

    ## Fix safety
    No automatic fix: where the checks and the differentiation go is the author's choice.
    """

    CODE = "VJP608"
    NAME = "staged-checkify-around-custom-derivative"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp
from jax.experimental import checkify

@jax.custom_vjp
def log_cosh(x):
    return jnp.logaddexp(x, -x) - jnp.log(2.0)

log_cosh.defvjp(lambda x: (log_cosh(x), jnp.tanh(x)), lambda t, g: (t * g,))
checked = jax.jit(checkify.checkify(log_cosh, errors=checkify.float_checks))
''']
    VALID = ['''
import jax
import jax.numpy as jnp
from jax.experimental import checkify

@jax.custom_vjp
def log_cosh(x):
    return jnp.logaddexp(x, -x) - jnp.log(2.0)

log_cosh.defvjp(lambda x: (log_cosh(x), jnp.tanh(x)), lambda t, g: (t * g,))
checked_grad = jax.jit(checkify.checkify(jax.grad(lambda x: jnp.sum(log_cosh(x))), errors=checkify.float_checks))
''']

    def check(self) -> None:
        # vjplint.rules.transforms._checkify finds the compositions; each kind is worded here.
        for found in Checkify(self.model).stagings():
            if isinstance(found, StagedAround):
                outer, target = found.outer, found.target
                if self.model.facts.derivative_named(target) is found.hit.d:
                    self._report(outer, f"`{self.quote(outer, 60)}` stages checkify of", found.hit, direct=True)
                else:
                    self._report(outer, f"`{self.quote(outer, 60)}` stages checkify of `{self.quote(target, 30)}`",
                                 found.hit)
            elif isinstance(found, CheckifiesJitted):
                self._report(found.call, f"`{self.quote(found.call, 60)}` checkifies jitted code", found.hit)
            elif isinstance(found, DecoratedStaged):
                fn, dec = found.fn, found.dec
                if found.above is not None:
                    self._report(found.above, f"`@{self.quote(found.above, 30)}` stacked above "
                                              f"`@{self.quote(dec, 50)}` on `{fn.name}` stages the checkified "
                                              f"function", found.hit)
                else:
                    how = ("stacked above a jit decorator" if found.staged_below
                           else "around a function that runs jitted code")
                    self._report(dec, f"`@{self.quote(dec, 50)}` on `{fn.name}` is {how}", found.hit)
            elif isinstance(found, StagedLater):
                outer, dec = found.outer, found.dec
                self._report(outer, f"`{self.quote(outer, 40)}` stages `{found.fn.name}`, checkified by "
                                    f"`@{self.quote(dec, 50)}` (line {dec.lineno})", found.hit)
            elif isinstance(found, DifferentiatedJitted):
                self._differentiated(found)

    def _differentiated(self, found: DifferentiatedJitted) -> None:
        call, via, jitted, use = found.call, found.via, found.jitted, found.use
        label = "the lambda" if isinstance(jitted, ast.Lambda) else f"`{jitted.name}`"
        arg = call.args[0]
        if via is arg:
            how = f"`{self.quote(arg, 30)}`, the jitted function"
        else:
            assert isinstance(via, ast.Call)  # the call of the jitted function in the differentiated one
            how = f"`{self.quote(arg, 30)}`, which calls the jitted `{self.quote(via.func, 30)}` (line {via.lineno})"
        self._report(call, f"`{self.quote(call.func, 30)}` differentiates {how}; the jitted {label} calls "
                           f"`{self.quote(use, 40)}` (line {use.lineno}), checkify applied at line "
                           f"{found.site.lineno}", found.hit)  # type: ignore[attr-defined]

    def _report(self, node: ast.AST, how: str, hit: Hit, direct: bool = False) -> None:
        d = hit.d
        reaches = " " if direct else ", which reaches "
        self.report(node, (
            f"{how}{reaches}{d.label} `{d.name}` (line {d.anchor.lineno}) with a check {hit.where}: "
            f"{hit.evidence}. Differentiating the checkified function (`jax.grad`, `jax.vjp`, "
            f"`jax.value_and_grad`, also under an outer jit) raises {FOREACH} (jax-ml/jax#35871); without "
            f"the jit it works. Differentiate inside checkify (`jax.jit(checkify.checkify(jax.grad(f)))`) or inside "
            f"the jit, around an unjitted checkify"))

