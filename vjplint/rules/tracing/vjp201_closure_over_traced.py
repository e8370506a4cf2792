from __future__ import annotations

from typing import Optional

from vjplint.diagnostics import Applicability, Fix, Severity
from vjplint.rules.tracing._closures import Capture, Closures, MayBeHeld, MayBeTraced, OwnArguments, Root, Traced, is_self
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative
from vjplint.model.semantic import Scope
from vjplint.plans.closure_plan import closure_edits, closure_edits_jvp
from vjplint.plans.residual_plan import Refusal
from vjplint.rules.base import Rule
from vjplint.rules.tracing.closure_messages import evidence, gradient_maybe_message, gradient_message, maybe_message, own_arguments_message


class ClosureOverTraced(Rule):
    """## What it does
    Flags a `jax.custom_vjp` / `jax.custom_jvp` function, or one of its fwd/bwd/jvp rules,
    defined inside a function and reading that function's parameters or values computed from
    them (also `obj.attr` of an object built from them, and `self` of a method), when the value
    may be a tracer: the enclosing function is traced (jit/grad/vmap/scan... in this module) or
    called from traced code with a traced argument (in this module, or in another module of the
    run: a factory `make(rate)` that a module importing it calls from a differentiated function),
    the value is annotated or computed as an array, or it is used as array data.

    As a warning that says "may": a parameter of the enclosing function (or a value unpacked or
    computed from one) that nothing here shows traced, when the primal reads it and the bwd/jvp
    rule computes with it as array data, and nothing marks it static (a static annotation,
    default or use; callers that pass only static Python values: every call of the enclosing
    function in the run, this module and the others, passes a literal or a module constant, or
    leaves a default that is one; a PRNG key, which is never differentiated). Whether it fails depends on whether a caller differentiates with respect to
    it, which this module does not show. A value only the primal reads (an offset, batched data)
    is not reported this way. The same holds one object away: a value read from `self`
    (`w = self.params["w"]`, `self.beta`) that the object's constructor stores from such a
    parameter where the object is built (`Gate({"w": w})` in a helper). `self` is not reported
    when the custom function reads it only as `self.attr` and the class stores each such field
    only from a constant (`self.C = _C`, a module-level NumPy table, in an `__init__` without
    parameters; nothing else in the module stores it, no `setattr`): no caller can put a tracer
    there; nor is a use of `self.step_size` evidence of an array when the class stores that field
    only from a constant or a parameter defaulting to a Python literal (`step_size=1.0`). A value
    the custom function and its rules read only for its shape or dtype (`jnp.zeros_like(x0)`,
    `x0.dtype`) is not captured data: JAX stages no constant for it, and every transformation runs.

    A `jax.custom_gradient` function defined inside a function is judged the same way, its body
    as the primal and the vjp function it returns (a lambda, or a local `def` or lambda) as the
    bwd rule; the vjp reading the body's own inputs and values is the design and is not reported.
    Its "may" also covers a value only the vjp function reads, as array data: that is how
    custom_gradient is written (a gradient-scaling or clipping layer closing over its scale), and
    such a value fails under `jax.grad(jax.jit(...))` though it is never differentiated
    (jax-ml/jax#24545, #25017). A custom_gradient whose body or vjp function reads a value the
    enclosing function computes from a parameter it also passes to the custom_gradient as an
    argument (its output or pullback from a `jax.vjp` run outside it, `out, op_vjp =
    jax.vjp(op, a, b)` then `inner(a, b)`) is an error, whatever traces the enclosing function:
    differentiating the custom_gradient, its purpose, makes the value a tracer of that same
    differentiation (not for a parameter marked static, a PRNG key, or one only given Python
    values; one report per custom_gradient).

    ## Why is this bad?
    JAX only knows how to differentiate a custom function with respect to its explicit
    arguments. A closed-over tracer fails as soon as it is differentiated (`jax.grad` with
    respect to it: `UnexpectedTracerError`, or for a custom_vjp staged by `jit`/`checkpoint`/
    `scan`: `CustomVJPException: Detected differentiation of a custom_vjp function with respect to
    a closed-over value`). Rules closing over a tracer of a `jit` that sits inside the `grad`
    (`jax.grad(jax.jit(f))`) fail at lowering with `TypeError: No constant handler for type
    DynamicJaxprTracer`, even when the value is not differentiated. Eager calls, `jit`, `vmap` and
    `jit(grad)` with respect to other arguments work, so tests pass until someone nests the
    transformations differently. A custom_vjp whose rules alone (not the primal) read the value
    works under every transformation but `jax.grad(jax.jit(...))` of the caller (the value gets no
    derivative through it, as the primal does not read it), and the message says so; one that is
    only differentiated where it is defined (`return jax.grad(g)(x0)`) works under all of them and
    is not flagged (measured: `docs/facts/scripts/hazard_closure_messages.py`).

    `jax.custom_gradient` is a custom_vjp whose fwd traces the returned vjp function, so it
    behaves alike (measured on JAX 0.10.2: `docs/facts/scripts/hazard_custom_gradient_closure.py`):
    a vjp closing over the enclosing function's `scale` works eagerly, under `jit`, `vmap`, `grad`
    and `jit(grad)`, but `jax.grad(jax.jit(f))` raises `TypeError: No constant handler for type:
    <class 'jax._src.interpreters.partial_eval.DynamicJaxprTracer'>` and
    `jax.grad(jax.checkpoint(f))` `UnexpectedTracerError`; when the body reads it too,
    `jax.grad` with respect to it raises `UnexpectedTracerError` (LinearizeTracer). A Python float
    closed over, or the value passed as an argument (the vjp returning `None` for it), works
    under all of them. A value computed outside from the custom_gradient's own arguments
    (`docs/facts/scripts/hazard_custom_gradient_jax1366.py`, jax-ml/jax#1366): an output or
    pullback from an outer `jax.vjp(op, a, b)`, an output `jnp.tanh(x)`, or cotangent factors
    `0.5 * b` read only by the vjp, with `inner(a, b)` called: eager, jit and vmap work; grad,
    jit(grad) and vmap(grad) raise `UnexpectedTracerError` (LinearizeTracer), grad(jit)
    `CustomVJPException` or NCH. `jax.vjp` run inside the custom_gradient on its arguments works
    under all of them, and a factor from a parameter the custom_gradient is not given fails only
    under grad(jit), as above.

    ## Example
    ```python
    def loss(c, x):
        @jax.custom_vjp
        def g(x):
            return c * jnp.sin(x)
        def g_fwd(x):
            return g(x), x
        def g_bwd(x, ct):
            return (c * jnp.cos(x) * ct,)
        g.defvjp(g_fwd, g_bwd)
        return jnp.sum(g(x))
    ```

    ## Use instead
    Pass the value explicitly (and return its cotangent, or `None`, from bwd):
    ```python
    @jax.custom_vjp
    def g(c, x):
        return c * jnp.sin(x)
    def g_fwd(c, x):
        return g(c, x), (c, x)
    def g_bwd(res, ct):
        c, x = res
        return (jnp.sum(jnp.sin(x) * ct), c * jnp.cos(x) * ct)
    g.defvjp(g_fwd, g_bwd)
    ```
    or keep the closure and hoist its tracers with `jax.closure_convert(fn, x)`, passing the
    returned constants as arguments of a custom function that takes `fn` in `nondiff_argnums`.

    ## Fix safety
    For a `jax.custom_vjp` (no `nondiff_argnums`) defined with `def` inside a function, with
    fwd and bwd defined there too and registered by one `defvjp`, the fix passes the value as a
    new leading argument: the primal and fwd take it first, fwd saves it in the residuals when bwd
    reads it (bwd unpacks it), every bwd `return` gets `None` in its slot, and every call of the
    custom_vjp in the enclosing function passes it. It is **safe** when only the rules read the
    value: the primal does not, so no gradient reached it through the custom_vjp before, and none
    does after (`None` is exact); the rewrite then also works under `jax.grad(jax.jit(...))`.
    It is **unsafe** when the primal reads the value: the original raised when differentiated
    with respect to it, the rewrite gives zero there (VJP602 then points at the `None`, which
    the author should replace with the cotangent). No fix is offered when the value is `self` or
    an object (an argument must be a pytree of arrays), is bound more than once, is used as a
    Python value, when the custom_vjp is used other than by calls in its defining function
    (returned, stored, passed to `vmap`: those callers cannot be given the value), when fwd/bwd
    are used elsewhere or are lambdas, when a fwd `return` is not a literal pair or a bwd
    `return` is not a tuple literal of the primal's arity.

    For a `jax.custom_jvp` (no `nondiff_argnums`) defined with `def` inside a function, with one
    `defjvp` rule defined there, the fix makes the value the primal's new leading parameter; the
    jvp rule takes it from `primals` and ignores its tangent (`(c, x), (_, t) = primals,
    tangents`), and every call passes it. Passing it through `nondiff_argnums` instead is no fix:
    a traced value there still fails under `jax.grad(jax.jit(...))` (docs/facts/fixes-v2.md).
    **Safe** when only the jvp rule reads the value (the primal's output does not depend on it,
    so its ignored tangent contributes nothing); **unsafe** when the primal reads it
    (differentiating with respect to it raised, and gives 0 after: write its tangent's
    contribution). Offered only when the rule unpacks `primals` and `tangents` by tuple
    assignments and never reads `_`. Proven on JAX: `fixtures/fix_small/vjp201_*`.

    No fix is offered for a `jax.custom_gradient`: pass the value as an argument by hand, its vjp
    function returning `None` (or its cotangent) in that slot; a value computed from its own
    arguments is computed inside it instead (`jax.vjp` on its arguments there).
    """

    CODE = "VJP201"
    NAME = "closure-over-traced"
    FIX = "pass the value as an explicit argument (safe when only the rules read it)"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp", b"custom_gradient")
    INVALID = ['''
import jax
import jax.numpy as jnp

def loss(c, x):
    @jax.custom_vjp
    def g(x):
        return c * jnp.sin(x)
    def g_fwd(x):
        return g(x), x
    def g_bwd(x, ct):
        return (c * jnp.cos(x) * ct,)
    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(x))

grad_c = jax.grad(loss)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

def make_power(n: int):
    @jax.custom_jvp
    def power(x):
        return x ** n
    @power.defjvp
    def power_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return power(x), n * x ** (n - 1) * t
    return power
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        for finding in Closures(self.model).findings(d):
            if isinstance(finding, OwnArguments):
                self.report(finding.found[0][0].first, own_arguments_message(self.model, d, finding.found))
            elif isinstance(finding, Traced):
                capture, root, verdict = finding.capture, finding.root, finding.verdict
                if d.api == "custom_gradient":
                    self.report(capture.first, gradient_message(d, capture, root, verdict))
                else:
                    self.report(capture.first, self._message(d, capture, root, verdict),
                                fix=self._explicit_argument_fix(d, capture, root, finding.scope))
            elif isinstance(finding, MayBeTraced):
                capture, root, use = finding.capture, finding.root, finding.use
                message = (gradient_maybe_message(d, capture, root, use) if d.api == "custom_gradient"
                           else maybe_message(d, capture, root, use))
                self.report(capture.first, message, severity=Severity.WARNING)
            else:
                self.report(finding.capture.first, self._held_message(d, finding), severity=Severity.WARNING)

    def _explicit_argument_fix(self, d: CustomDerivative, capture: Capture, root: Root, scope: Scope) -> Optional[Fix]:
        """Pass the value as `d`'s new leading argument (vjplint.plans.closure_plan), when the
        value is an array: the parameter itself, or computed from it with a jnp/lax call (an
        object would have to be a registered pytree to be an argument)."""
        if not (capture.name == root.param or root.computed_with):
            return None
        try:
            edits = (closure_edits if d.kind == "vjp" else closure_edits_jvp)(self.model, d, capture.name, scope, self.options.relint)
        except Refusal:
            return None
        exact = d.name not in capture.readers  # only the rules read it: no gradient reached it before either
        how = "bwd returns None for it" if d.kind == "vjp" else "the jvp rule ignores its tangent"
        return self.editing(Applicability.SAFE if exact else Applicability.UNSAFE,
                            f"Pass `{capture.name}` to `{d.name}` as an explicit argument ({how})", edits)

    def _message(self, d: CustomDerivative, capture: Capture, root: Root, verdict: Verdict) -> str:
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        outer, what = evidence(capture, root, verdict)
        target = "the values `self` holds" if is_self(root) else f"`{root.param}`"
        passed = "the arrays `self` holds" if capture.name == "self" else f"`{capture.name}`"
        readers = ", ".join(f"`{r}`" for r in capture.readers)
        if d.kind == "vjp":
            fails = ("UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp "
                     "function with respect to a closed-over value' when the call is staged by jit/checkpoint/scan")
        else:
            fails = "UnexpectedTracerError"
        rule = "its cotangent (or None) from bwd" if d.kind == "vjp" else "its tangent from the jvp rule"
        head = (f"{kind} `{d.name}` is defined inside `{outer}` and closes over `{capture.name}` (read in "
                f"{readers}): {what}.")
        remedy = (f"Pass {passed} as an explicit argument of `{d.name}` (returning {rule}), or hoist it with "
                  f"`jax.closure_convert`")
        if d.kind == "vjp" and d.name not in capture.readers:
            # Measured (hazard_closure_messages.py §2): read only by fwd/bwd, eager, jit, vmap and grad
            # of any argument work; only grad of a jit around the caller fails.
            return (f"{head} Only the rules read it, so eager calls, jit, vmap and grad work (with respect to "
                    f"{target} too: the primal does not read it, so it gets no derivative through "
                    f"`{d.name}`), but `jax.grad(jax.jit(...))` around the caller fails with 'No constant "
                    f"handler for type DynamicJaxprTracer'. {remedy}")
        return (f"{head} Differentiating `{d.name}` with respect to {target} fails ({fails}), and "
                f"`jax.grad(jax.jit(...))` fails with 'No constant handler for type DynamicJaxprTracer' even "
                f"when it is not differentiated. {remedy}")


    def _held_message(self, d: CustomDerivative, held: MayBeHeld) -> str:
        capture, fn, param, chain, use, what = held.capture, held.function, held.param, held.chain, held.use, held.what
        kind_of = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        outer = getattr(fn, "name", "<lambda>")
        reader, quoted = use
        name = what or f"`{capture.name}`"
        fails = ("UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp function "
                 "with respect to a closed-over value'") if d.kind == "vjp" else "UnexpectedTracerError"
        rule = "its cotangent (or None) from bwd" if d.kind == "vjp" else "its tangent from the jvp rule"
        return (f"{kind_of} `{d.name}` is defined inside `{getattr(d.enclosing, 'name', '?')}` "
                f"and closes over {name}, computed from `{outer}`'s parameter `{param}` "
                f"({chain}), read by `{d.name}` and used as array data by its rule `{reader}` "
                f"(`{quoted}`). Nothing here shows `{outer}` traced, but if it is differentiated "
                f"with respect to `{param}`, JAX may raise ({fails}). If `{param}` can be an array "
                f"being differentiated, pass {name} as an explicit argument of `{d.name}` "
                f"(returning {rule}), or hoist it with `jax.closure_convert`")


