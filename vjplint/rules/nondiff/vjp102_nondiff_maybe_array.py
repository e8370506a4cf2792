from __future__ import annotations

from typing import Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.helpers import NondiffVerdictRule
from vjplint.rules.nondiff._opaque_objects import plain_object_passed


class NondiffMaybeArray(NondiffVerdictRule):
    """## What it does
    Flags a `jax.custom_vjp` nondiff position that may hold an array: there is evidence that it
    is used as an array, but also evidence that it is a static value (a literal at a call site,
    a static-sounding name such as `eps` or `axis`, a use as a Python condition; not `lr`,
    `learning_rate` or `temperature`, which schedules and annealing make traced arrays); or it is used several times as array
    data (arithmetic with values known to be arrays, `-rate * x`, an index into one) and nothing
    says it is static; or it is used once, as a factor or in a comparison (`g * scale`, `x > thresh`),
    and a call in this module passes it a traced value (a parameter of a jitted, vmapped or
    differentiated function: VJP104 reports that call); or a call passes a record (a dataclass, NamedTuple or object built in a
    function) whose field holds a parameter nothing shows static and the rule reads that field as
    array data (`Config(rest=rest)` with `x - cfg.rest`): differentiating the caller with respect
    to that parameter puts a tracer in the slot; or the primal returns it as its output (`return x`:
    a custom function's outputs are JAX arrays), or every argument of the custom_vjp is nondiff (it
    then defines no derivative at all, and what a caller differentiates arrives as a tracer), when
    nothing says it is static or a function (`vjplint.facts.nondiff_output`). VJP101 reports the
    confident cases. A value the rules convert with host NumPy itself (`np.diag(mass)`,
    `np.allclose(mass, ...)`; not `np.shape`) is a concrete NumPy array by the author's design (a
    tracer raises there whatever its slot), and a parameter of a JAX primitive (`reduce_precision`'s
    bit widths, `decimals`, a `*_in_dim` size) is a Python value: neither is flagged.

    ## Why is this bad?
    If the argument is an array and becomes a tracer (under `jit`, batched `vmap`, or `grad`
    with respect to it), JAX raises `UnexpectedTracerError` at the call. If it is always a
    Python value, the code is fine and the warning can be silenced with `# noqa: VJP102` or a
    `static-names` entry in `[tool.vjplint]`.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def soft_threshold(t, x):
        return jnp.sign(x) * jnp.maximum(jnp.abs(x) - t, 0.0)
    ...
    soft_threshold(0.1, x)          # a literal here, an array elsewhere?
    ```

    ## Use instead
    The residual-plus-None form (see VJP101), or annotate the parameter (`t: float`) so the
    intent is explicit.

    ## Fix safety
    The residual-plus-None fix is unsafe here (the evidence is weaker, so review it), except when
    a call of this module passes the slot a traced value (the case VJP104 reports at the call):
    that call raises today, and the message then says so without "may". It
    is not offered for the same reasons as VJP101's (rules in another file or shared, a rule
    also called or referenced outside `defvjp`, a moved parameter a `jax.jit` marks static...).
    """

    CODE = "VJP102"
    NAME = "nondiff-maybe-array"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    LEVEL = "maybe"
    INVALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def shrink(t, x):
    return jnp.maximum(x - t, 0.0)

def shrink_fwd(t, x):
    return shrink(t, x), x

def shrink_bwd(t, x, g):
    return (jnp.where(jnp.greater(x, t), g, 0.0),)

shrink.defvjp(shrink_fwd, shrink_bwd)

def prox(x, level):
    return shrink(0.1, x) + shrink(level, x)
''']
    VALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def total(axis, x):
    return jnp.sum(x, axis=axis)

def total_fwd(axis, x):
    return total(axis, x), x.shape

def total_bwd(axis, shape, g):
    return (jnp.broadcast_to(jnp.expand_dims(g, axis), shape),)

total.defvjp(total_fwd, total_bwd)
''']

    def fix_refused(self, d: CustomDerivative, moved: Tuple[int, ...]) -> str:
        return plain_object_passed(self.model, d, moved)

    def message(self, v: Verdict, keyword: str, d: CustomDerivative) -> str:
        traced = next((e for e in v.evidence if e.traced_at), None)
        if traced is not None:
            return (f"`{v.name}` (position {v.position}) is in {keyword} and holds an array at line "
                    f"{traced.traced_at}: it {traced.reason}, so JAX raises UnexpectedTracerError there; move it "
                    f"to the residuals (bwd returns None for it)")
        evidence = v.best("array")
        call = self.model.facts.nondiff_traced_call(d, v.position, v.name)
        if call is not None and evidence is not None:
            return (f"`{v.name}` (position {v.position}) is in {keyword} and holds an array at line {call[0]}: it "
                    f"{evidence.reason}, and the call there passes it a traced value ({call[1]}), so JAX raises "
                    f"UnexpectedTracerError there (VJP104); move it to the residuals (bwd returns None for it)")
        against = v.contradictions()
        assert evidence is not None
        contra = f", although it {against[0].reason}" if against else ""
        return (f"`{v.name}` (position {v.position}) is in {keyword} and may be an array: it {evidence.reason}"
                f"{contra}. If it can be traced, JAX raises UnexpectedTracerError; move it to the residuals "
                f"or annotate it as a static type")
