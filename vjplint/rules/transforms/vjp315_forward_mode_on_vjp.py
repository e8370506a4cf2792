from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.forward import (FORWARD, HESSIAN, LIBRARY_VJP, Caller, CallsLibrary, CallsVjp, ForwardMode,
                                   InstanceCall, IsCustomVjp, PassedIn, RuleCall, Step)
from vjplint.model.jaxapi import PARTIAL
from vjplint.rules.base import Rule

JVP_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


class ForwardModeOnVjp(Rule):
    """## What it does
    Flags forward-mode differentiation of a `jax.custom_vjp` function of this module:
    `jax.jvp(f, ...)`, `jax.jacfwd(f)` and calling the function returned by
    `jax.linearize(f, ...)`, where `f` is the custom_vjp itself (also through `jit`, `vmap`,
    `checkpoint`, `functools.partial` or a name bound to one of them), a lambda or function
    that calls it with a differentiated argument (directly, or through a function of the module
    or an object), or an instance of a class of the module whose `__call__` does (an equinox
    Module, an op that creates its custom_vjp in `__init__`), a bound method of such an object
    (`jax.jacfwd(model.apply)`), a `lax.scan`/`fori_loop`/`while_loop`/`cond`/`map`, `tree_map` or `functools.reduce`
    whose body does (its operands and what it closes over carry the tangent), a helper that
    writes the perturbed values into a list and calls with `*args` (a `linearize` helper), a
    jitted alias (`g = jax.jit(f)`), what a factory of the module returns, or a function a
    decorator of the module turns into a custom_vjp or a wrapper calling one; and forward over reverse
    (`jax.hessian(f)`, `jax.jacfwd(jax.grad(f))`, `jax.jvp(jax.grad(f), ...)`) when the
    custom_vjp's fwd or bwd calls a custom_vjp, or calls `jax.pure_callback` (directly or in a
    helper), which has no JVP ("Pure callbacks do not support JVP"). In a run over several modules, the custom_vjp's
    definition is also flagged when another module applies `jax.jvp`/`jax.jacfwd` to it by name
    (`jax.jvp(mod.f, ...)`) or applies the linear function `jax.linearize(mod.f, ...)` returns;
    the message names that file and line. Library functions that are custom_vjps count too:
    `jax.experimental.ode.odeint`, reached by a tangent through `y0`, `t`, its extra arguments
    or a value its dynamics close over (its fwd and bwd call it again, so `jax.hessian` fails
    as well; docs/facts/scripts/library_custom_vjp.py).

    ## Why is this bad?
    A custom_vjp defines only a reverse-mode rule. JAX cannot push tangents forward through it
    and fails at trace time:

        TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function.

    Forward over reverse (`jax.hessian`, `jax.jacfwd(jax.grad(f))`, `jax.jvp` of a gradient)
    differentiates the gradient's computation, i.e. fwd and bwd, not the custom_vjp: it works
    while they compute inline, and fails with the same error as soon as fwd or bwd calls a
    custom_vjp (a fwd written as `return f(x), res`, the common form), which is flagged too.
    Measured exceptions, not flagged: `jax.linearize` of a caller of a custom_vjp whose outputs
    are all integer arrays (indices: their tangents are float0, so the linear function never meets
    it; `jax.jvp` still raises), `jax.linearize` of a gradient (flagged only where fwd or bwd calls
    `jax.pure_callback`), and `jax.jvp` of a jitted gradient when only fwd calls one
    (`docs/facts/scripts/hazard_forward_over_reverse.py`).
    Inside `jax.make_jaxpr`/`jax.eval_shape` the jvp is only staged and nothing is raised, so
    those uses are not reported.

    ## Example
    ```python
    jac = jax.jacfwd(my_custom_vjp_fn)(x)
    ```

    ## Use instead
    ```python
    jac = jax.jacrev(my_custom_vjp_fn)(x)
    ```
    or define the derivative with `jax.custom_jvp`, which supports both modes.

    ## Fix safety
    No automatic fix: `jacrev` computes the same Jacobian at a different cost, and `jvp`
    products need a reverse-mode formulation or a custom_jvp.
    """

    CODE = "VJP315"
    NAME = "forward-mode-on-vjp"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"odeint")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

jac = jax.jacfwd(f)(jnp.ones(3))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

jac = jax.jacrev(f)(jnp.ones(3))
hess = jax.hessian(lambda x: f(x).sum())(jnp.ones(3))   # fwd and bwd compute inline
''']

    def check(self) -> None:
        external = self.model.facts.external
        if external is None:
            return
        for d in self.model.derivatives:  # forward mode applied to it in another module of the run
            if d.kind != "vjp" or d.api != "jax":
                continue
            uses = self.model.facts.transformed_elsewhere(d, "forward")  # by its name or an alias (`g = f`)
            if not uses:
                continue
            how, where = uses[0]
            self.report(d.anchor, f"at {where}, {how} pushes tangents through `{d.name}`, a custom_vjp function: JAX "
                                  f"raises TypeError \"can't apply forward-mode autodiff (jvp) to a custom_vjp "
                                  f"function.\". Use reverse mode there (`jax.vjp`, `jax.jacrev`), or give `{d.name}` "
                                  f"a custom_jvp")

    @property
    def _forward(self) -> ForwardMode:
        """vjplint.facts.forward: how forward mode reaches a custom_vjp; the words are here."""
        return self.model.facts.forward_mode()

    def visit_Call(self, node: ast.Call) -> None:
        q = self.model.index.qualname(node.func)
        if q not in HESSIAN and q not in FORWARD:
            return
        forward = self._forward
        if q in HESSIAN and node.args and not forward.not_evaluated(node):
            self._check_over_reverse(node.args[0], node.args[0], forward.argnums(node),
                                     "`jax.hessian` (jacfwd of jacrev)", ("fwd", "bwd"))
            return
        if q not in FORWARD or not node.args or forward.not_evaluated(node):
            return
        name = q.rsplit(".", 1)[1]  # jvp, jacfwd or linearize
        inner = forward.reverse_target(node.args[0])
        if inner is not None:
            target, argnums, rev, staged = inner
            # Measured: jvp of jit(grad(f)) works when only fwd calls a custom_vjp (not under vmap);
            # linearize(grad(f)) works when a rule calls a custom_vjp, but raises when one calls
            # `jax.pure_callback` (fixtures/rules/VJP315/*linearize_grad*).
            roles = ("bwd",) if staged and name == "jvp" else ("fwd", "bwd")
            self._check_over_reverse(node.args[0], target, argnums, f"`jax.{name}` of `jax.{rev}`", roles,
                                     callbacks_only=name == "linearize")
            return
        perturbed = forward.argnums(node) if name == "jacfwd" else None
        how = f"`jax.{name}`"
        if name == "linearize":
            applied = self.model.facts.linear_fn_applied(node)
            if applied is None:
                return
            how = f"the linear function from `jax.linearize` (used at line {applied})"
        self._check_target(node.args[0], perturbed, how)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for dec in node.decorator_list:
            target: ast.expr = dec
            argnums: Optional[Tuple[int, ...]] = (0,)
            if isinstance(dec, ast.Call) and self.model.index.qualname(dec.func) in PARTIAL and dec.args:
                target = dec.args[0]
                argnums = self._forward.argnums(dec, positional=False)
            if argnums is not None and self.model.index.qualname(target) == "jax.jacfwd":
                step = self._forward.calls_vjp(node, argnums, 0, ())
                if step is not None:
                    self.report(dec, f"`@jax.jacfwd` differentiates `{node.name}` in forward mode, but "
                                     f"{self._why(step)}: JAX raises TypeError \"{JVP_ERROR}\". Use `jax.jacrev`, or "
                                     f"give the function a custom_jvp")

    visit_AsyncFunctionDef = visit_FunctionDef

    def _check_over_reverse(self, where: ast.expr, target: ast.expr, argnums: Optional[Tuple[int, ...]], how: str,
                            roles: Tuple[str, ...], callbacks_only: bool = False) -> None:
        """Forward over reverse differentiates the gradient's computation: fwd (linearized) and bwd.
        It fails only when one of them calls a custom_vjp (measured, hazard_forward_over_reverse.py)."""
        step = self._forward.reach(target, argnums)
        if step is None:
            return
        rule = self._forward.rule_calling_vjp(self.model.facts.reached(step), roles)
        if not rule:
            return
        if rule is not True and rule.inner is None:  # type: ignore[union-attr]
            via = f" through `{rule.helper}`" if rule.helper else ""  # type: ignore[union-attr]
            self.report(where, f"{how} pushes tangents through the gradient of `{self.quote(target, 40)}`: "
                               f"{self._why(step)}, and its {_rule_words(rule)} calls "  # type: ignore[arg-type]
                               f"`jax.pure_callback`{via} (line {rule.call.lineno}), which has no JVP rule, so "  # type: ignore[union-attr]
                               f"differentiating the rule raises ValueError \"Pure callbacks do not support JVP\". "
                               f"A second derivative differentiates fwd and bwd themselves (`jacrev` of `jacrev` "
                               f"too): write the rule's host computation as JAX code, give the callback its own "
                               f"custom_jvp, or compute the second derivative without it")
            return
        if callbacks_only:
            return
        inner = ("its fwd and bwd rules call it again" if rule is True else
                 f"its {rule.role} rule `{rule.name}` calls custom_vjp `{rule.inner.name}` "  # type: ignore[union-attr]
                 f"(line {rule.call.lineno})")  # type: ignore[union-attr]
        self.report(where, f"{how} pushes tangents through the gradient of `{self.quote(target, 40)}`: "
                           f"{self._why(step)}, and {inner}, so the forward pass meets a custom_vjp: JAX raises "
                           f"TypeError \"{JVP_ERROR}\". Use `jax.jacrev(jax.jacrev(...))`, compute the value inline "
                           f"in the rule instead of calling a custom_vjp there, or give the function a custom_jvp")

    def _check_target(self, expr: ast.expr, argnums: Optional[Tuple[int, ...]], how: str) -> None:
        step = self._forward.reach(expr, argnums)
        if step is None or "linearize" in how and self._integer_inside(step):
            return
        fix = "Use `jax.jacrev`" if "jacfwd" in how else "Use reverse mode (`jax.vjp`, `jax.jacrev`)"
        self.report(expr, f"{how} pushes tangents through `{self.quote(expr, 40)}`, but {self._why(step)}: JAX "
                          f"raises TypeError \"{JVP_ERROR}\". {fix}, or give the function a custom_jvp")

    def _integer_inside(self, step: Step) -> bool:
        """A caller reaches a custom_vjp whose outputs are all integer or boolean arrays (indices):
        their tangents are float0, so the linear function `jax.linearize` returns never pushes one
        through it (measured: `linearize(lambda v: jnp.sum(v[order(v)]))` works, jvp raises)."""
        while not isinstance(step, (IsCustomVjp, CallsVjp, CallsLibrary)):
            step = step.inner
        return isinstance(step, CallsVjp) and self.model.facts.integers().primal_output(step.d) is not None

    # -- the words for how the tangent reaches the custom_vjp -----------------------------------
    def _why(self, step: Step) -> str:
        if isinstance(step, IsCustomVjp):
            return f"`{step.d.name}` is a custom_vjp function"
        if isinstance(step, InstanceCall):
            return f"`{self.quote(step.expr, 30)}` is an instance of `{step.cls.name}` and {self._why(step.inner)}"
        if isinstance(step, PassedIn):
            return (f"`{step.param}` is a parameter of `{step.fn.name}`, given `{self.quote(step.arg, 30)}` at line "
                    f"{step.call.lineno}, and {self._why(step.inner)}")
        who = _label(step.caller)
        if isinstance(step, CallsVjp):
            callee = self.quote(step.call.func, 30)
            what = f"custom_vjp `{step.d.name}` (line {step.call.lineno})" if callee == step.d.name else \
                f"`{callee}` (custom_vjp `{step.d.name}`, line {step.call.lineno})"
            return (f"{who} calls {what} with "
                    f"`{self.quote(step.arg, 30)}`, which carries the tangent")
        if isinstance(step, CallsLibrary):
            return (f"{who} calls `{self.quote(step.call.func, 30)}` (line {step.call.lineno}) with "
                    f"`{self.quote(step.value, 30)}`, which carries the tangent, and "
                    f"{LIBRARY_VJP[step.library.qualname][0]}")
        instance = f", an instance of `{step.instance_of.name}`," if step.instance_of is not None else ""
        return (f"{who} calls `{self.quote(step.call.func, 30)}` (line {step.call.lineno}){instance} with "
                f"`{self.quote(step.carrier, 30)}`, which carries the tangent, and {self._why(step.inner)}")


def _rule_words(rule: RuleCall) -> str:
    return f"{rule.role} lambda" if rule.name == rule.role else f"{rule.role} rule `{rule.name}`"


def _label(caller: Caller) -> str:
    if caller.cls is not None:
        return f"`{caller.cls.name}.{getattr(caller.fn, 'name', '__call__')}`"
    return "the lambda" if isinstance(caller.fn, ast.Lambda) else f"`{caller.fn.name}`"
