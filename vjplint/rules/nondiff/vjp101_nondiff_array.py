from __future__ import annotations

from typing import Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.helpers import NondiffVerdictRule
from vjplint.rules.nondiff._opaque_objects import plain_object_passed


class NondiffArray(NondiffVerdictRule):
    """## What it does
    Flags a `jax.custom_vjp` whose `nondiff_argnums` (or `nondiff_argnames`) position holds an
    array, or a pytree holding arrays (a `self` module with array fields, a PRNG key). The
    evidence is quoted: an annotation, a use as array data (`jnp.clip(g, lo, hi)`), `.shape`, or
    a call site passing an array (or a record built in a function whose field holds one).

    ## Why is this bad?
    JAX refuses tracers in nondiff positions of a custom_vjp. As soon as the argument is
    traced, under plain `jax.jit` already, under `vmap` when it is batched, or under `grad`
    with respect to it, every call raises:

        jax.errors.UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a
        custom_vjp function in a position indicated by nondiff_argnums as non-differentiable.

    The code works eagerly and in small tests, and breaks the day someone jits the caller.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x

    def clip_gradient_fwd(lo, hi, x):
        return x, None

    def clip_gradient_bwd(lo, hi, _, g):
        return (jnp.clip(g, lo, hi),)

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    ```

    ## Use instead
    Make the arrays ordinary arguments, save them in the residuals and return `None` for them:
    ```python
    @jax.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def clip_gradient_fwd(lo, hi, x):
        return x, (lo, hi)

    def clip_gradient_bwd(res, g):
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    ```

    ## Fix safety
    The residual-plus-None fix is safe when fwd and bwd are defined in the same file, are used
    by no other custom_vjp and nowhere else in the file, and every `return` can be edited in
    place; it is unsafe when a return has to be bound and indexed, for an in-house wrapper, and
    when the primal's output depends on a moved argument that a call may differentiate: there
    differentiating with respect to it raised before and gives zero after, and the `None` gets
    `# noqa: VJP602` (the argument was declared never differentiated; docs/fixes.md#safety). A
    rule imported from its module by another file of the run (or of the editor's workspace)
    makes the in-file fix unsafe, and the finding names that file.
    When the rules live in another file that is part of the run (`from .rules import f_fwd,
    f_bwd`), `--fix --unsafe-fixes` rewrites the primal's file and the rules' file together,
    written atomically (all or none): unsafe, because callers outside the run's files are not
    searched; a rule named in any other file of the run refuses it (`vjplint --fix --verify`
    proves it with the rewritten rules module). The diagnostic itself, computed per file, says
    that no fix is offered for the file alone.
    No fix is offered when a call of the module passes the argument an object of a class of the
    module that is no pytree: as a regular argument JAX would reject it (VJP109).
    It is not offered when the rules live in a file outside the run or are shared, when fwd or bwd is
    also called or referenced outside `defvjp` (a direct caller would get the new return or
    parameters), when a `jax.jit` marks a moved parameter static, or a jitted caller passes it
    one of its static parameters (such callers pass Python values, which a differentiable
    position rejects), with `symbolic_zeros=True`, or when a
    `return` is not a tuple (the message says why). The primal's signature never changes, so callers keep working; the
    gradient with respect to the moved arguments is zero, as it was.
    """

    CODE = "VJP101"
    NAME = "nondiff-array"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    LEVEL = "array"

    INVALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale(w, x):
    return w * x

def scale_fwd(w, x):
    return w * x, None

def scale_bwd(w, _, g):
    return (jnp.dot(w, g),)

scale.defvjp(scale_fwd, scale_bwd)
''']
    VALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)

def apply_fwd(fn, x):
    return fn(x), x

def apply_bwd(fn, x, g):
    return (jax.vjp(fn, x)[1](g)[0],)

apply.defvjp(apply_fwd, apply_bwd)
''']

    def fix_refused(self, d: CustomDerivative, moved: Tuple[int, ...]) -> str:
        return plain_object_passed(self.model, d, moved)

    def message(self, v: Verdict, keyword: str, d: CustomDerivative) -> str:
        evidence = v.best("array")
        assert evidence is not None
        return (f"`{v.name}` (position {v.position}) is in {keyword} but {evidence.reason}; a traced value here "
                f"raises UnexpectedTracerError under jit, vmap or grad. Pass it as a regular argument, save it "
                f"in the residuals and return None for it from bwd")
