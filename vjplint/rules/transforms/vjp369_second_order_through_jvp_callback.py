from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.forward import FORWARD, HESSIAN, REVERSE, CallsVjp, ForwardMode, InstanceCall, IsCustomVjp, Step
from vjplint.model.semantic import FUNCTION_TYPES, named_function
from vjplint.rules.base import Rule

# The transformations that differentiate what they are given: a derivative given to one of them
# is differentiated a second time.
FIRST = ("jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.jacfwd", *REVERSE)
OUTER = (*FIRST, *FORWARD, "jax.vjp")
WRAPPERS = ("jax.jit", "jax.checkpoint", "jax.remat", "jax.vmap")
ERROR = "Pure callbacks do not support JVP"


class SecondOrderThroughJvpCallback(Rule):
    """## What it does
    Flags a second derivative (`jax.hessian(f)`, `jax.jacfwd(jax.grad(f))`, `jax.jvp(jax.grad(f),
    ...)`, `jax.grad` of a function that takes `jax.grad(f)`, `jax.jacrev(jax.jacrev(f))`...) of a
    function that reaches a `jax.custom_jvp` of this module with a differentiated argument, when
    that custom_jvp's jvp rule calls `jax.pure_callback` (directly, through a helper of the module
    or a `functools.partial` alias of it): the common way to give a host computation a derivative
    (JAX's "external callbacks" guide), whose first derivative works. `f` is followed as VJP315
    follows forward mode to a custom_vjp: lambdas, helpers, `partial`, methods, loop bodies.

    ## Why is this bad?
    A second derivative differentiates the first one's computation, and that computation is the
    jvp rule: its `pure_callback` is then traced with tangents, and a callback has no JVP rule.
    Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_second_order_jvp_callback.py`): the
    first `jax.grad`, `jax.jvp` and `jax.jacfwd` run, and `jax.hessian`, `jax.jacfwd(jax.grad(f))`,
    `jax.jvp(jax.grad(f), ...)`, `jax.grad` of a gradient and `jax.jacrev(jax.jacrev(f))` raise
    `ValueError: Pure callbacks do not support JVP. Please use jax.custom_jvp to use callbacks
    while taking gradients.`

    ## Example
    ```python
    @jax.custom_jvp
    def host_sin(x):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    @host_sin.defjvp
    def host_sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        slope = jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return host_sin(x), slope * t

    curvature = jax.hessian(lambda x: host_sin(x).sum())(x)
    ```

    ## Use instead
    Make the derivative's callback differentiable too (a custom_jvp around the slope's callback
    whose own rule calls the host's second derivative), compute the slope with JAX operations, or
    take only first derivatives of the host function.

    ## Fix safety
    No automatic fix: the second derivative needs the host's own second derivative.
    """

    CODE = "VJP369"
    NAME = "second-order-through-jvp-callback"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    INVALID = ['''
import jax
import numpy as np

@jax.custom_jvp
def host_sin(x):
    return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    slope = jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return host_sin(x), slope * t

curvature = jax.hessian(lambda x: host_sin(x).sum())
''']
    VALID = ['''
import jax
import numpy as np

@jax.custom_jvp
def host_sin(x):
    return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    slope = jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return host_sin(x), slope * t

slope = jax.grad(lambda x: host_sin(x).sum())
''']

    def check(self) -> None:
        forward = self.model.facts.forward_mode("jvp")
        if not any(d.kind == "jvp" and d.api == "jax" and self._callback(forward, d) for d in self.model.derivatives):
            return  # no jvp rule here calls a callback: nothing to follow
        for node in self.model.facts.calls_in(self.model.module):
            q = self.model.index.qualname(node.func) or ""
            if not node.args or q not in HESSIAN and q not in OUTER or forward.not_evaluated(node):
                continue
            if q in HESSIAN:
                self._check(forward, node, node.args[0], forward.argnums(node), "`jax.hessian`")
                continue
            inner = self._first(forward, node.args[0])
            if inner is not None:
                target, argnums, first = inner
                self._check(forward, node, target, argnums,
                            f"`jax.{q.rsplit('.', 1)[1]}` of `{self.quote(first.func, 30)}`")

    def _first(self, forward: ForwardMode, expr: ast.expr, depth: int = 0
               ) -> Optional[Tuple[ast.expr, Optional[Tuple[int, ...]], ast.Call]]:
        """(f, argnums, the first derivative's call) when `expr` is a first derivative of `f`
        (also through jit or a name bound once to one) or a function of the module that takes one
        (`lambda x: jnp.sum(jax.grad(loss)(x))`)."""
        if depth > 3:
            return None
        call = expr if isinstance(expr, ast.Call) else forward._bound_call(expr)
        if call is not None and call.args:
            q = self.model.index.qualname(call.func) or ""
            if q in WRAPPERS:
                return self._first(forward, call.args[0], depth + 1)
            if q in FIRST:
                return call.args[0], forward.argnums(call), call
            return None
        fn = named_function(self.model.index, expr)
        if not isinstance(fn, FUNCTION_TYPES):
            return None
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, fn.args.vararg) if a is not None}
        for node in self.model.facts.own_of_types(fn, (ast.Call,)):
            made = node.func  # type: ignore[attr-defined]
            given = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}  # type: ignore[attr-defined]
            if isinstance(made, ast.Call) and made.args and (self.model.index.qualname(made.func) or "") in FIRST \
                    and given & params:  # the derivative taken at what the outer one perturbs
                return made.args[0], forward.argnums(made), made
        return None

    def _check(self, forward: ForwardMode, node: ast.Call, target: ast.expr, argnums: Optional[Tuple[int, ...]],
               how: str) -> None:
        step = forward.reach(target, argnums)
        if step is None:
            return
        d = self.model.facts.reached(step)
        found = self._callback(forward, d) if getattr(d, "kind", None) == "jvp" else None
        if found is not None:
            rule, (call, helper) = found
            via = f" (through `{helper}`)" if helper else ""
            self.report(node, f"{how} differentiates twice through `{self.quote(target, 40)}`: {self._why(step)}, "
                              f"and its jvp rule `{rule.name or 'jvp'}` calls `jax.pure_callback`{via} (line "
                              f"{call.lineno}); the second derivative differentiates the jvp rule, and a callback "
                              f"has no JVP rule: JAX raises ValueError \"{ERROR}\". Give the slope's callback a "
                              f"custom_jvp of its own, compute it with JAX operations, or take first derivatives only")

    def _callback(self, forward: ForwardMode, d):
        """(the jvp rule, (the `pure_callback` call, the helper making it)) of custom_jvp `d`, if any."""
        for role, rule in self.model.facts.rules_of(d):
            found = forward.callback_in(rule.node) if role == "jvp" and rule.node is not None else None
            if found is not None:
                return rule, found
        return None

    def _why(self, step: Step) -> str:
        if isinstance(step, IsCustomVjp):
            return f"`{step.d.name}` is a custom_jvp function"
        if isinstance(step, InstanceCall):
            return f"`{self.quote(step.expr, 30)}` is an instance of `{step.cls.name}` and {self._why(step.inner)}"
        fn = step.caller.fn
        who = "the lambda" if isinstance(fn, ast.Lambda) else f"`{getattr(fn, 'name', '__call__')}`"
        if isinstance(step, CallsVjp):
            return (f"{who} calls custom_jvp `{step.d.name}` (line {step.call.lineno}) with "
                    f"`{self.quote(step.arg, 30)}`")
        return (f"{who} calls `{self.quote(step.call.func, 30)}` (line {step.call.lineno}) with "  # type: ignore[union-attr]
                f"`{self.quote(step.carrier, 30)}`, and {self._why(step.inner)}")  # type: ignore[union-attr]
