from __future__ import annotations

import ast
from typing import Optional

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.facts.kinds import CALLABLE
from vjplint.rules.nondiff._opaque_objects import closure_maker, plain_object


class NondiffTracedAtCall(Rule):
    """## What it does
    Flags a call to a custom_vjp function, inside code this module traces (a function
    decorated with or passed to `jax.jit`, `vmap`, `grad`, `lax.scan`, ...), that passes a traced
    value in a nondiff position: a parameter of the traced function (not marked static), or
    anything computed from one or with `jnp`/`lax`, whatever the custom_vjp's parameter type;
    the value is followed through assignments, tuples, the returns of module functions (a
    function returning a new `jnp` array builds a tracer when called there) and the module's
    callers. A traced value bound with `functools.partial(f, lr)` counts too: every call of the
    partial passes it. A closure or an object of a plain class (not a pytree) holding a traced
    value is one leaf to JAX's nondiff check: the message says what fails then (grad, grad of
    jit). Also flags the custom_vjp itself handed to a transformation that traces a nondiff
    position: `jax.jit(f)` without `static_argnums` for it, `jax.vmap(f)` batching it,
    `jax.grad(f, argnums=...)` differentiating it, `lax.cond(p, f, g, ...)`.

    A custom_jvp closes over its nondiff arguments instead of rejecting tracers, so for it only
    one pattern is flagged, as a warning: `jax.vmap` batching a nondiff position (default
    `in_axes=0` batches them all) when the batched function is staged: `jax.jit(jax.vmap(f))`,
    `jax.checkpoint` of it, or the vmap built or called inside a jitted function.

    When the caller is in another module of the run (vjplint.project.cross_values), the traced value
    that module passes is reported at the custom_vjp's definition, with the caller's file, line
    and evidence chain; that includes `t = init_table()` inside a jitted function when
    `init_table`, imported from a module of the run, returns a new `jnp` array.

    ## Why is this bad?
    Inside a traced function these values are tracers, and custom_vjp rejects tracers in
    nondiff positions: `jax.errors.UnexpectedTracerError: Found a JAX Tracer object passed as an
    argument to a custom_vjp function in a position indicated by nondiff_argnums...`. Even
    `jnp.array(0.5)` created inside `jit` is a tracer. A custom_jvp's batched nondiff argument
    runs, and so does grad of it unstaged, but through `jit` or `checkpoint` differentiating
    raises `UnexpectedTracerError: Encountered an unexpected tracer ... wrapped in a BatchTracer`.

    ## Example
    ```python
    @jax.jit
    def step(lo, x):
        return clip_gradient(lo, 1.0, x)   # lo is traced
    ```

    ## Use instead
    Mark the value static (`jax.jit(step, static_argnums=0)`), pass a Python constant, or move
    the argument out of `nondiff_argnums` (see VJP101).

    ## Fix safety
    No automatic fix: the right change depends on the caller.
    """

    CODE = "VJP104"
    NAME = "nondiff-traced-at-call"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(n, x):
    return x * n

f.defvjp(lambda n, x: (x * n, None), lambda n, _, g: (g * n,))

@jax.jit
def step(n, x):
    return f(n, x)
''']
    VALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(n, x):
    return x * n

f.defvjp(lambda n, x: (x * n, None), lambda n, _, g: (g * n,))

@partial(jax.jit, static_argnums=0)
def step(n, x):
    return f(n, x)
''']

    def check(self) -> None:
        self._values = self.model.facts.values()

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.kind == "jvp":
            self._jvp_batched_and_staged(d)
        if d.kind != "vjp":
            return
        names = dict(d.nondiff_names())
        for site in d.call_sites:
            traced = self.model.traced.get(site.enclosing) if site.enclosing is not None else None
            for position, name in names.items():
                arg = self.model.facts.argument_at(site.call, position, name)
                if arg is None:
                    continue
                reason = self.model.facts.traced_reason(arg, site.enclosing, traced) \
                    if traced is not None else None
                if reason is None:  # the value followed through tuples, returns, fields, callers
                    kind = self._values.of(arg)
                    reason = kind.traced if kind.tag != CALLABLE else None
                if reason is None:
                    continue
                if closure_maker(self.model, arg):
                    self.report(arg, _closure_message(d.name, position, name, reason))
                    continue
                cls = plain_object(self.model, arg)
                if cls is not None:
                    self.report(arg, _closure_message(d.name, position, name, reason, cls))
                    continue
                self.report(arg, f"`{d.name}` receives a traced value in its nondiff position {position} "
                                 f"(`{name}`): {reason}, so JAX raises UnexpectedTracerError here. Mark it "
                                 f"static in the transformation, pass a Python constant, or move `{name}` "
                                 f"out of nondiff_argnums")
        self._through_partials(d, names)
        self._from_other_modules(d, names)
        # A function or string in the slot fails differently (jit: "not a valid JAX type").
        not_numbers = {v.position for v in self.model.facts.verdicts(d)
                       if any((e.kind == "callable" and e.weight >= 3) or e.string
                              for e in v.evidence)}
        for call, position, verb in self.model.facts.traced_boundaries(d):
            if position in not_numbers:
                continue
            name = names[position]
            self.report(call, f"`{d.name}` is handed to a transformation that traces its nondiff position "
                              f"{position} (`{name}`): `{self.model.quote(call, 50)}` {verb}, so every call "
                              f"raises UnexpectedTracerError. Mark it static there (`static_argnums`, "
                              f"`in_axes=None`, `argnums`), or move `{name}` out of nondiff_argnums")

    def _jvp_batched_and_staged(self, d) -> None:
        """A custom_jvp closes over its nondiff arguments: a batched one runs, but once the batched
        call is staged (jit, checkpoint) differentiating through it leaks the BatchTracer
        (docs/facts/scripts/hazard_nondiff_vmap.py). Unstaged, it is fine: not reported."""
        names = dict(d.nondiff_names())
        for call, position, _ in self.model.facts.traced_boundaries(d):
            if self.model.index.qualname(call.func) != "jax.vmap":
                continue
            staged = _staging(self.model, call)
            if staged is None:
                continue
            name = names[position]
            self.report(call, f"`{self.quote(call, 50)}` batches the nondiff position {position} (`{name}`) of the "
                              f"custom_jvp `{d.name}`, and {staged}: the primal runs, but differentiating through "
                              f"it (grad, jvp) raises UnexpectedTracerError ('Encountered an unexpected tracer', a "
                              f"BatchTracer in the nondiff argument the rule closes over). Pass `{name}` unbatched "
                              f"(`in_axes=None`, a Python value), or move `{name}` out of nondiff_argnums",
                        severity=Severity.WARNING)

    def _through_partials(self, d, names) -> None:
        """`partial(f, lr)` binds a nondiff position: a traced `lr` reaches `f` at every call of the partial."""
        values = self.model.facts.values()
        for call in self.model.facts.partials_of(d):
            enclosing = self.model.index.enclosing_function(call)
            traced = self.model.traced.get(enclosing) if enclosing is not None else None
            for position, name in names.items():
                arg = self.model.facts.partial_argument(call, position, name)
                if arg is None:
                    continue
                reason = self.model.facts.traced_reason(arg, enclosing, traced) if traced is not None else None
                if reason is None:
                    kind = values.of(arg)
                    reason = kind.traced if kind.tag != CALLABLE else None
                if reason is None:
                    continue
                self.report(arg, f"`{self.quote(call, 50)}` binds a traced value to the nondiff position "
                                 f"{position} (`{name}`) of `{d.name}`: {reason}, so calling the partial raises "
                                 f"UnexpectedTracerError. Mark it static in the transformation, bind a Python "
                                 f"constant, or move `{name}` out of nondiff_argnums")

    def _from_other_modules(self, d, names) -> None:
        """A caller in another module of the run passing a tracer: reported at the definition,
        with the caller's chain (its file and line), once per derivative."""
        for call in self.model.facts.external_calls(d.name, d.anchor):
            for position, name in names.items():
                arg = call.arg(position, name)
                if arg is None or not arg.traced or arg.tag == "callable":
                    continue
                who = f"`{call.caller}` passes" if call.caller else "module-level code passes"
                self.report(d.anchor, f"`{d.name}` receives a traced value in its nondiff position {position} "
                                      f"(`{name}`) from another module: at {call.where} {who} `{arg.quoted}` "
                                      f"({arg.traced}), so JAX raises UnexpectedTracerError there. Mark it static "
                                      f"in that transformation, pass a Python constant, or move `{name}` out of "
                                      f"nondiff_argnums")
                return


# Transformations that stage the function they are given (measured for jit and checkpoint).
STAGING = ("jax.jit", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "equinox.filter_jit",
           "flax.nnx.jit", "flax.nnx.remat")


def _staging(model, vmap_call: ast.Call) -> Optional[str]:
    """How the vmapped function gets staged: `jax.jit(jax.vmap(f))`, the vmap inside a jitted
    function, or a name bound to it and handed to `jax.jit` or called in a jitted function."""
    index = model.index
    parent = index.parent(vmap_call)
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is vmap_call \
            and index.qualname(parent.func) in STAGING:
        return f"`{model.quote(parent.func, 30)}(...)` stages it"
    enclosing = index.enclosing_function(vmap_call)
    traced = model.traced.get(enclosing) if enclosing is not None else None
    if traced is not None and traced.how in STAGING:
        return f"it is built inside `{getattr(enclosing, 'name', '<lambda>')}`, which `{traced.how}` stages"
    assign = parent if isinstance(parent, ast.Assign) and parent.value is vmap_call else None
    if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    target = assign.targets[0].id
    for load in index.of_type(ast.Name):
        if load.id != target or not isinstance(load.ctx, ast.Load):
            continue
        bindings = index.lookup(target, index.scope_of(load))
        if len(bindings) != 1 or bindings[0].value is not vmap_call:
            continue
        user = index.parent(load)
        if isinstance(user, ast.Call) and user.args and user.args[0] is load and index.qualname(user.func) in STAGING:
            return f"`{model.quote(user.func, 30)}({target})` stages it"
        fn = index.enclosing_function(load)
        traced = model.traced.get(fn) if fn is not None else None
        if isinstance(user, ast.Call) and user.func is load and traced is not None and traced.how in STAGING:
            return f"`{target}` is called inside `{getattr(fn, 'name', '<lambda>')}`, which `{traced.how}` stages"
    return None


def _closure_message(fname: str, position: int, name: str, reason: str, cls: Optional[str] = None) -> str:
    # Measured: docs/facts/scripts/hazard_closure_messages.py, section 3; a plain object behaves
    # as a closure does (fixtures/rules/VJP105/fire_object_from_traced_params.py).
    what = f"an object of the plain class `{cls}` (not a pytree) holding" if cls else "a Python callable closing over"
    return (f"`{fname}` receives, in its nondiff position {position} (`{name}`), {what} a "
            f"traced value ({reason}). JAX's nondiff check sees one non-tracer object, so jit, vmap and grad with "
            f"respect to the other arguments run, but `jax.grad(jax.jit(...))` fails with 'No constant handler "
            f"for type DynamicJaxprTracer', and differentiating with respect to the closed-over value raises "
            f"UnexpectedTracerError ('Encountered an unexpected tracer'), or CustomVJPException when the call is "
            f"staged by jit/checkpoint. Pass the traced values as differentiable arguments (`jax.closure_convert` "
            f"hoists them), or build the callable from Python constants")
