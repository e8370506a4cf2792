from __future__ import annotations

import ast
import re

from vjplint.diagnostics import Severity
from vjplint.facts.forward import CallsLibrary, CallsThrough, InstanceCall, PassedIn, Step
from vjplint.rules.base import Rule
from vjplint.syntax.names import DIFFERENTIATION_PATTERN

MESSAGES = {"Pure": "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while "
                    "taking gradients.",
            "IO": "IO callbacks do not support JVP."}


class GradThroughHostCallback(Rule):
    """## What it does
    Flags a differentiation (`jax.grad`, `jax.value_and_grad`, `jax.jacrev`, `jax.jacfwd`,
    `jax.hessian`, `jax.jvp`, `jax.vjp`, `jax.linearize`, equinox's `filter_grad` /
    `filter_value_and_grad` / `filter_jvp` / `filter_vjp`, `nnx.grad`) whose function pushes a
    differentiated argument into an operand of `jax.pure_callback` or `io_callback` that no
    custom_jvp or custom_vjp wraps: directly, through helpers, lambdas, `functools.partial`
    (of the function or of the callback), methods, static methods, callable objects, a function
    passed as an argument, and the bodies of `lax.scan`, `lax.fori_loop`, `lax.cond`, `lax.map`,
    `tree_map`, also under `jax.jit`, `jax.vmap` or `jax.checkpoint`. Silent when the callback
    runs inside a custom derivative (its rules give the derivative), when its operand is under
    `lax.stop_gradient`, an integer or boolean value, a value of zero derivative (`jnp.floor`,
    `jnp.sign`, `jnp.round`, a comparison), or not computed from the differentiated
    arguments (a constant, another argument than `argnums`), and for `jax.debug.callback` /
    `jax.debug.print`, which JAX differentiates through.

    ## Why is this bad?
    A host callback has no derivative rule. Measured on JAX 0.10.2 (`docs/facts/jax-errors.md`,
    "Host callbacks under differentiation (e33)", 28 hazards and 20 look-alikes): as soon as a
    tangent reaches an operand, every one of these transformations raises `ValueError: Pure
    callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking
    gradients.` (`IO callbacks do not support JVP.` for io_callback), even when the callback's
    result is discarded, used as a `lax.cond` predicate or wrapped in `lax.stop_gradient`, and
    even under `jax.eval_shape`: JAX traces the tangent through the callback before it looks at
    where the result goes.

    ## Example
    ```python
    def loss(x):
        total = jnp.sum(f(x))
        penalty = jax.pure_callback(host_penalty, jax.ShapeDtypeStruct((), jnp.float32), total)
        return total + penalty

    g = jax.grad(loss)(x)
    ```

    ## Use instead
    ```python
    @jax.custom_jvp
    def penalty(total):
        return jax.pure_callback(host_penalty, jax.ShapeDtypeStruct((), jnp.float32), total)

    @penalty.defjvp
    def penalty_jvp(primals, tangents):
        (total,), (dt,) = primals, tangents
        return penalty(total), host_penalty_slope(total) * dt  # the host's derivative, or a JAX one
    ```
    or pass `lax.stop_gradient(total)` to the callback when the penalty needs no gradient, or
    compute it with JAX operations.

    ## Fix safety
    No automatic fix: the derivative of the host computation is the author's to give.
    """

    CODE = "VJP370"
    NAME = "grad-through-host-callback"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"pure_callback", b"io_callback")  # the callback is the subject: no custom derivative is needed
    NEEDS = re.compile(DIFFERENTIATION_PATTERN)  # and a differentiation's name
    INVALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_jvp
def f(x):
    return jnp.tanh(x)

f.defjvp(lambda p, t: (jnp.tanh(p[0]), (1 - jnp.tanh(p[0]) ** 2) * t[0]))

def host_penalty(t):
    return np.asarray(1e-3 * t * t, dtype=np.float32)

def loss(x):
    total = jnp.sum(f(x))
    return total + jax.pure_callback(host_penalty, jax.ShapeDtypeStruct((), jnp.float32), total)

g = jax.grad(loss)(jnp.ones(3))
''']
    VALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_jvp
def f(x):
    return jnp.tanh(x)

f.defjvp(lambda p, t: (jnp.tanh(p[0]), (1 - jnp.tanh(p[0]) ** 2) * t[0]))

def host_penalty(t):
    return np.asarray(1e-3 * t * t, dtype=np.float32)

def loss(x):
    total = jnp.sum(f(x))
    sds = jax.ShapeDtypeStruct((), jnp.float32)
    return total + jax.pure_callback(host_penalty, sds, jax.lax.stop_gradient(total))

g = jax.grad(loss)(jnp.ones(3))
''']

    def check(self) -> None:
        for hit in self.model.facts.callbacks_differentiated():
            end = hit.step
            path = []
            while not isinstance(end, CallsLibrary):
                path.append(self._hop(end))
                end = end.inner  # type: ignore[union-attr]
            where = self._who(end.caller.fn)
            name = "jax.pure_callback" if hit.kind == "Pure" else "io_callback"
            via = "".join(f"{p}, " for p in path if p)
            self.report(hit.transform,
                        f"`jax.{hit.how}` differentiates `{self.quote(hit.target, 40)}`: {via}{where} calls "
                        f"`{name}` (line {end.call.lineno}) with `{self.quote(end.value, 30)}`, which carries the "
                        f"differentiated argument, and no custom_jvp or custom_vjp wraps that callback; a host "
                        f"callback has no derivative rule: JAX raises ValueError \"{MESSAGES[hit.kind]}\" "
                        f"(even when its result is unused). Wrap the callback in a `jax.custom_jvp` whose jvp rule "
                        f"gives its derivative (`@jax.custom_jvp def penalty(t): return {name}(...)` and "
                        f"`@penalty.defjvp`), pass `jax.lax.stop_gradient({self.quote(end.value, 20)})` when it needs "
                        f"no gradient, or compute it with JAX operations")

    def _who(self, fn: ast.AST) -> str:
        return "the lambda" if isinstance(fn, ast.Lambda) else f"`{getattr(fn, 'name', '__call__')}`"

    def _hop(self, step: Step) -> str:
        if isinstance(step, CallsThrough):
            return (f"{self._who(step.caller.fn)} calls `{self.quote(step.call.func, 30)}` (line {step.call.lineno}) "
                    f"with `{self.quote(step.carrier, 30)}`")
        if isinstance(step, InstanceCall):
            return f"`{self.quote(step.expr, 30)}` is an instance of `{step.cls.name}`"
        if isinstance(step, PassedIn):
            return f"`{step.param}` is `{self.quote(step.arg, 30)}` (line {step.call.lineno})"
        return ""
