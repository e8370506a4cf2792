from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from vjplint.diagnostics import NoneTangentRule, Severity
from vjplint.model.file_model import CustomDerivative, Registration, Signature
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode, constant_value, named_function

# Transformations differentiating their function's `argnums` (default 0).
BY_ARGNUMS = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.jacfwd", "jax.jacobian",
                        "jax.hessian"})
# Transformations differentiating every primal they are given (`jax.vjp(f, *primals)`).
ALL_PRIMALS = frozenset({"jax.vjp", "jax.linearize"})
JVP = "jax.jvp"
# Wrappers that keep their function's argument positions.
SAME_POSITIONS = frozenset({"jax.jit", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "jax.vmap"})
ZEROS = frozenset({"jax.numpy.zeros_like", "jax.numpy.zeros"})


class DefjvpsNoneUsedInput(Rule):
    """## What it does
    Flags `None` in `f.defjvps(...)` for an argument that the primal's output depends on
    differentiably: the argument reaches a return value of the primal through arithmetic or
    differentiable `jnp`/`lax` functions (not only through indexing, comparisons, shapes,
    `stop_gradient` or integer casts). Arguments that are evidently not differentiated are left
    alone: annotated, defaulting to or used as Python values (a slice bound, a shape), named like
    integer arrays, masks or keys (`idx`, `mask`, `key`), passed an int, or passed only constants
    by every call in the module. A name that only suggests a static value (`n`, `eps`, `shape`)
    is left alone too, unless a call passes it a variable or differentiates it. It is an error
    where a call in the module differentiates the argument (`jax.grad(f, argnums=1)`, or `grad`,
    `jacfwd`, `jvp`, `vjp` of a function passing a differentiated value there), a warning ("may")
    otherwise.

    ## Why is this bad?
    `defjvps` takes one tangent function per argument, and `None` means "this argument
    contributes no tangent": custom_jvp adds a zero for it and never compares it with the
    primal. When the output does depend on that argument, its derivative is silently zero, under
    `grad`, `jit(grad)`, `vmap(grad)`, `jacfwd`, `jacrev` and `jvp` alike, with no error
    (jax-ml/jax#5913, where the reporter wanted differentiating the second argument to raise).
    Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_defjvps_none.py`): with
    `f.defjvps(rule_for_x, None)` and `f(x, shape) = 1 - exp(-shape * x)`, every derivative with
    respect to `shape` is 0 where the reference is `x * exp(-shape * x)`. `None` is right for an
    argument used only as an integer, a shape, through `stop_gradient` or in a comparison, and for
    one nobody differentiates.

    ## Example
    ```python
    @jax.custom_jvp
    def soft_weight(x, shape):
        return 1.0 - jnp.exp(-shape * x)

    soft_weight.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot, None)
    ```

    ## Use instead
    ```python
    soft_weight.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot,
                        lambda s_dot, ans, x, shape: x * jnp.exp(-shape * x) * s_dot)
    ```
    If the argument is not meant to be differentiated, make differentiating it fail instead of
    returning 0: a `defjvps` rule that raises is called (with a zero tangent) even when only the
    other arguments are differentiated, so write one rule with
    `f.defjvp(f_jvp, symbolic_zeros=True)` that raises when that argument's tangent is not a
    `jax.custom_derivatives.SymbolicZero`; or pass it as a Python value in `nondiff_argnums`
    (with `defjvp`; a traced array there is silently zero too, see VJP106).

    ## Fix safety
    No automatic fix: the missing tangent has to be derived.
    """

    CODE = "VJP609"
    NAME = "defjvps-none-used-input"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def soft_weight(x, shape):
    return 1.0 - jnp.exp(-shape * x)

soft_weight.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot, None)

dw_dshape = jax.grad(lambda x, s: jnp.sum(soft_weight(x, s)), argnums=1)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def soft_weight(x, shape):
    return 1.0 - jnp.exp(-shape * x)

soft_weight.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot,
                    lambda s_dot, ans, x, shape: x * jnp.exp(-shape * x) * s_dot)
''', '''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def first_n(x, n):
    return jnp.sum(x[:n] ** 2)

first_n.defjvps(lambda x_dot, ans, x, n: jnp.sum(2.0 * x[:n] * x_dot[:n]), None)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.primal is None or d.nondiff or d.nondiff_unresolved or d.bound_self:
            return
        primal = d.primal
        if primal.args.vararg is not None:
            return
        sig = self.model.signature(primal)
        for reg in self.model.facts.own_registrations(d):
            if reg.method == "defjvps" and not reg.as_decorator and self.model.facts.registered_here(d, reg.node):
                self._check(d, primal, sig, reg)

    def _check(self, d: CustomDerivative, primal: FunctionNode, sig: Signature, reg: Registration) -> None:
        positional = sig.positional
        if len(reg.rules) > len(positional) or not any(r.is_none for r in reg.rules):
            return  # another count is VJP312's
        flows = self.model.facts.primal_flow(primal)
        for i, rule in enumerate(reg.rules):
            if not rule.is_none and flows.reaches_output(positional[i]) is None:
                return  # a tangent for an input the output does not use: rerouted by design, or not followed
        for i, rule in enumerate(reg.rules):
            param = positional[i]
            if not rule.is_none or self._not_differentiated(primal, sig, param):
                continue
            through = flows.reaches_output(param)
            if through is None or self._int_passed(d, i, param) or self.model.facts.only_constants_passed(d, i, param):
                continue
            differentiated, only_others = self._differentiated(d, i, param)
            if only_others:
                continue  # the module differentiates `d`, never in this argument (`jax.grad(f, 1)` for `f(x, y)`)
            if differentiated is None and self.model.facts.name_evidence(param) and not self._variable_passed(d, i, param):
                continue  # `n`, `eps`: named like a static value, and nothing shows it is data
            self._report(d, rule.expr, param, positional, through, differentiated)

    def _report(self, d: CustomDerivative, where: ast.expr, param: str, positional: List[str], through: ast.expr,
                differentiated: Optional[str]) -> None:
        dot = f"{param}_dot" if f"{param}_dot" not in positional else "t"
        rule = f"lambda {dot}, out, {', '.join(positional)}: ..."
        advice = (f"Write `{param}`'s tangent rule (`{rule}`). If `{param}` is not meant to be differentiated, "
                  f"make differentiating it raise: one `{d.name}.defjvp(..., symbolic_zeros=True)` rule that raises "
                  f"when `{param}`'s tangent is not a `SymbolicZero` (a defjvps rule that raises breaks the other "
                  f"arguments' derivatives too); or pass it as a Python value in `nondiff_argnums`, with `defjvp`")
        head = (f"`{d.name}.defjvps(...)` gives `None` as the tangent rule for `{param}`, but the primal's output "
                f"depends on `{param}` (`{self.quote(through, 50)}`)")
        if differentiated is not None:
            self.report(where, (
                f"{head}, and {differentiated} differentiates it: custom_jvp treats a `None` rule as a "
                f"zero tangent, so the derivative with respect to `{param}` is silently 0 there (jax-ml/jax#5913). "
                f"{advice}"), evidence=NoneTangentRule(d.name, param))
            return
        self.report(where, (
            f"{head}: custom_jvp treats a `None` rule as a zero tangent, so the derivative with respect to "
            f"`{param}` may be silently 0 wherever a caller differentiates it (grad, jacfwd, jvp; "
            f"jax-ml/jax#5913). {advice}"), severity=Severity.WARNING, evidence=NoneTangentRule(d.name, param))

    def _not_differentiated(self, primal: FunctionNode, sig: Signature, param: str) -> bool:
        """Evidence stronger than the name that `param` holds a Python value, an int array or a key."""
        if self.model.facts.integer_named(param):
            return True
        evidence = [*self.model.facts.annotation_evidence(sig.annotations.get(param), param),
                    *self.model.facts.usage_evidence(primal, param)]
        if param in sig.defaults:
            evidence.extend(self.model.facts.default_evidence(sig.defaults[param]))
        return any(e.kind in ("static", "callable") and not e.from_name for e in evidence)

    def _sites(self, d: CustomDerivative, position: int, param: str) -> List[Tuple[ast.Call, ast.expr]]:
        """(call, the argument at `position`) for the calls of `d` here (its rules' calls aside)."""
        rules = {r.node for _, r in self.model.facts.rules_of(d) if r.node is not None}
        found = []
        for site in d.call_sites:
            if site.enclosing in rules or not self.model.facts.registered_here(d, site.call):
                continue
            arg = self.model.facts.argument_at(site.call, position - site.positional_offset, param)
            if arg is not None:
                found.append((site.call, arg))
        return found

    def _int_passed(self, d: CustomDerivative, position: int, param: str) -> bool:
        values = self.model.facts.values()
        for _, arg in self._sites(d, position, param):
            kind = values.of(arg)
            if kind.tag == "scalar" and kind.dtype == "int":
                return True
        return False

    def _variable_passed(self, d: CustomDerivative, position: int, param: str) -> bool:
        return any(self.model.facts.carries_a_variable(arg) for _, arg in self._sites(d, position, param))

    # -- a call of the module that differentiates the argument ---------------------------------------
    def _differentiated(self, d: CustomDerivative, position: int, param: str) -> Tuple[Optional[str], bool]:
        """How the first call here that differentiates `d` at `position` is described, directly
        (`jax.grad(d, argnums=1)`) or through a function of this module that passes a
        differentiated parameter there; None when no call does. Second: whether calls here
        differentiate `d`, all at known positions, none of them at `position`."""
        index = self.model.index
        others, unknown = False, False
        for call in index.of_type(ast.Call):
            q = index.qualname(call.func)  # type: ignore[attr-defined]
            if q not in BY_ARGNUMS and q not in ALL_PRIMALS and q != JVP:
                continue
            if not call.args or isinstance(call.args[0], ast.Starred):  # type: ignore[attr-defined]
                continue
            perturbed = self._perturbed(call, q)  # type: ignore[arg-type]
            target = call.args[0]  # type: ignore[attr-defined]
            while isinstance(target, ast.Call) and target.args and index.qualname(target.func) in SAME_POSITIONS:
                target = target.args[0]  # `jax.grad(jax.jit(f), argnums=1)`
            how = f"`{self.quote(call, 50)}` (line {call.lineno})"  # type: ignore[arg-type]
            found = self.model.facts.derivative_named(target)
            if found is not None:
                if not (any(o is found for o in self.model.same_name(d)) and isinstance(target, ast.Name)
                        and self.model.facts.registered_here(d, call)):
                    continue
                if perturbed is None:
                    unknown = True
                elif position in perturbed:
                    return how, False
                else:
                    others = True
                continue
            fn = self._function(target)
            if fn is None:
                continue
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
            names: Set[str] = set(params) if perturbed is None else {params[p] for p in perturbed
                                                                      if 0 <= p < len(params)}
            for site in d.call_sites:
                if site.enclosing is not fn or not self.model.facts.registered_here(d, site.call) or not names:
                    continue
                if not any(self.model.facts.depends_on_parameters(a, fn, names)
                           for a in (*site.call.args, *(k.value for k in site.call.keywords))):
                    continue  # `d` is called, but with nothing differentiated
                arg = self.model.facts.argument_at(site.call, position - site.positional_offset, param)
                if perturbed is None or arg is None:
                    unknown = True
                elif self.model.facts.depends_on_parameters(arg, fn, names):
                    label = "the lambda" if isinstance(fn, ast.Lambda) else f"`{fn.name}`"
                    return f"{how[:-1]}; {label} passes `{self.quote(arg, 30)}` as `{param}`)", False
                else:
                    others = True
        return None, others and not unknown

    def _perturbed(self, call: ast.Call, q: str) -> Optional[Set[int]]:
        """The positions of the function's arguments that `call` differentiates; None when unknown."""
        if q in ALL_PRIMALS:
            primals = call.args[1:]
            if any(isinstance(a, ast.Starred) for a in primals):
                return None
            # an int or bool literal's tangent is a float0 zero: that argument is not differentiated
            # (`jax.vjp(f, 1, 1.0)`, where VJP323 asks for `None` as its rule)
            return {i for i, a in enumerate(primals) if not (isinstance(a, ast.Constant) and type(a.value) in (int, bool))}
        if q == JVP:
            if len(call.args) < 3 or not isinstance(call.args[2], (ast.Tuple, ast.List)):
                return None
            return {i for i, t in enumerate(call.args[2].elts) if not self._zero(t)}
        node = next((k.value for k in call.keywords if k.arg == "argnums"), None)
        if node is None and len(call.args) > 1:
            node = call.args[1]
        if node is None:
            return {0}
        value = constant_value(self.model.index, node)
        if type(value) is int:
            return {value}
        if isinstance(value, (tuple, list)) and all(type(v) is int for v in value):
            return set(value)
        return None

    def _zero(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Constant):
            return type(expr.value) in (int, float) and expr.value == 0
        return isinstance(expr, ast.Call) and self.model.index.qualname(expr.func) in ZEROS

    def _function(self, expr: ast.expr) -> Optional[FunctionNode]:
        """The lambda, or the `def`/lambda a name is bound to once in this module."""
        return named_function(self.model.index, expr)
