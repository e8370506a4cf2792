from __future__ import annotations

import ast
from typing import Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode



class NonlinearJvpTangent(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule (`defjvp`; equinox's `filter_custom_jvp` rule, `def_jvp`, which
    equinox hands to a `jax.custom_jvp`) whose tangent output is not linear in the input tangents: a product of two tangent terms (`t * t`, `t ** 2`, `dual * t` with `dual` computed
    from `t`), a tangent divided into, a tangent inside a nonlinear function (`jnp.abs(t)`,
    `jnp.sin(t)`, `jnp.maximum(t, 0)`, `jnp.nan_to_num(t / x)`; through `lax.dot_general`'s two
    operands, and through a function of the module linear in what it receives, the custom_jvp
    itself included even where the call form rebinds its name: `f(dtype, t * t)`), or a term that does not depend on
    the tangents added to one that does (`2 * x * t + x`), a tangent passed to a custom_vjp
    function of the module (a custom_vjp cannot be transposed), a tangent term (the `tangents`
    tuple included) passed to `lax.stop_gradient`, a `jnp.where`/`lax.select` whose condition
    is computed from a tangent (also inside a function of the module the rule passes a tangent
    to, the custom_jvp itself included), or a tangent term (a closure over one included) passed
    into `lax.while_loop`, directly or through a helper function that feeds it into one: a
    function of the module, or, in a run over several modules (the CLI on a tree), a function
    imported from another module of the run, or a tangent term passed to a host callback
    (`jax.pure_callback`, `io_callback`), directly or through such a helper: a callback has no
    transpose rule, so `jax.grad` raises ValueError 'Pure callbacks do not support transpose'
    (docs/facts/scripts/jvp_tangent_callback.py, jax-ml/jax#30401); a callback that computes a
    Jacobian from the primals, multiplied by the tangent with jnp, is fine. Tangents are the names unpacked from the
    rule's `tangents` parameter and `tangents[i]`; a call of a function it does not know that
    receives a tangent stops the analysis, unless what it receives is already nonlinear (`t * t`,
    `jnp.abs(t)`, through a name the rule binds once or several times): the tangent returned is
    then computed from a nonlinear term, a warning (the steps vjplint does not read would have to
    discard it).

    ## Why is this bad?
    A jvp rule must return J(x) @ t: JAX linearizes the rule and, for reverse mode, transposes
    the tangent computation. Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_nonlinear_jvp.py`):
    a tangent inside a nonlinear function or multiplied by another makes `jax.grad` raise
    (`NotImplementedError: Transpose rule (for reverse-mode differentiation) for 'abs' not
    implemented`, or an `AssertionError` from the transposition), while `jax.jvp` and `jax.jacfwd`
    return values that are silently wrong (they change with the tangent's scale). A tangent-free
    term added to the tangent is ignored by `grad` but added to every `jvp`/`jacfwd` result. A
    tangent passed to a custom_vjp makes `grad` raise `NotImplementedError: Transpose rule ... for
    'custom_vjp_call' not implemented` while `jvp` works (jax-ml/jax#19087). A tangent through a
    `lax.while_loop` makes `grad` raise `ValueError: Reverse-mode differentiation does not work for
    lax.while_loop or lax.fori_loop with dynamic start/stop values` while `jvp` and `jacfwd` work
    (jax-ml/jax#18311, `docs/facts/scripts/hazard_key_and_while.py`); a `fori_loop` with static
    bounds, or a while_loop run on the primals only, transposes and is not reported.
    `lax.stop_gradient` of a tangent keeps its value, so `jvp`, `jacfwd` and `linearize` work,
    but it has no transpose rule: `jax.grad` with respect to that input raises
    `NotImplementedError: Transpose rule (for reverse-mode differentiation) for 'stop_gradient'
    not implemented` (jax-ml/jax#10994, `docs/facts/scripts/hazard_heldout_two.py`). A selection
    whose condition reads a tangent (`jnp.where(dx > 0, dx, 0)`, or the rule calling the masked
    function itself as `f(x, dw)` when the mask reads its second argument; JAX inlines a
    custom_jvp called on tangents and transposes its body) makes `grad` raise an
    `AssertionError` and `jvp` silently wrong (jax-ml/jax#5202, same script).

    ## Example
    ```python
    @my_abs.defjvp
    def my_abs_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.abs(x), jnp.abs(t)          # not linear in t
    ```

    ## Use instead
    ```python
    @my_abs.defjvp
    def my_abs_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.abs(x), jnp.sign(x) * t     # a primal-dependent factor times t
    ```
    Compute everything nonlinear from the primals and multiply the tangent by it; when the
    derivative rule itself must be nonlinear in the cotangent (clipping, nan filtering), use a
    `jax.custom_vjp`.

    ## Fix safety
    No automatic fix: the right linear form depends on the derivative meant.
    """

    CODE = "VJP601"
    NAME = "nonlinear-jvp-tangent"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    KINDS = frozenset({"jvp"})
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def my_abs(x):
    return jnp.abs(x)

@my_abs.defjvp
def my_abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.abs(x), jnp.abs(t)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def my_abs(x):
    return jnp.abs(x)

@my_abs.defjvp
def my_abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.abs(x), jnp.sign(x) * t
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg in d.registrations:
            if reg.method == "defjvps" and d.api == "jax":
                for rule in reg.rules:
                    if rule.node is not None and not rule.is_none and rule.node not in self._done:
                        self._done.add(rule.node)
                        self._check_rule(d, rule, rule.node, defjvps=True)
                continue
            if reg.method not in ("defjvp", "def_jvp") or not reg.rules:  # def_jvp: equinox
                continue
            rule = reg.rules[0]
            if rule.node is None or rule.node in self._done:
                continue
            self._done.add(rule.node)
            self._check_rule(d, rule, rule.node)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, fn: FunctionNode, defjvps: bool = False) -> None:
        fn = self.model.facts.through_wrapper(fn)  # a rule that only returns `_impl(primals, tangents)`
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][rule.bound_positional:]
        if len(params) < 2 or fn.args.vararg is not None:
            return
        # a defjvps rule is called (g, ans, *primals) and returns the tangent alone, linear in g
        checker = self.model.facts.linearity(fn, "", given={params[0]}) if defjvps else self.model.facts.linearity(fn, params[-1])
        for ret in self.model.facts.returns_of(fn):
            value = ret.value
            if defjvps:
                if value is None:
                    continue
                tangent = value
            elif not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
                continue
            else:
                tangent = value.elts[1]
            form = checker.form(tangent)
            if form.kind == "unknown":  # what it is made of is not all read: a nonlinear term in it
                inner = checker.nonlinear_within(tangent)
                if inner is not None:
                    self._reaches(d, rule, fn, tangent, inner, "defjvps rule" if defjvps else "jvp rule")
                continue
            if form.kind != "nonlinear" or form.node is None:
                continue
            name = rule.name or getattr(fn, "name", "<lambda>")
            kind = "defjvps rule" if defjvps else "jvp rule"
            if form.select:
                consequence = ("`jax.grad` raises an AssertionError when JAX transposes the selection (its condition "
                               "must not depend on a tangent; jax-ml/jax#5202), and `jax.jvp`/`jax.jacfwd` are "
                               "silently wrong wherever the condition on the tangent differs from the one on the "
                               "primal")
                remedy = ("Compute the condition from the primals only; when the rule reuses a function on the "
                          "tangents, pass the primal in the argument the condition reads")
            elif form.stop:
                consequence = ("`jax.jvp`, `jax.jacfwd` and `jax.linearize` work (stop_gradient keeps the value), but "
                               "reverse mode transposes the tangent computation and stop_gradient has no transpose "
                               "rule: `jax.grad` with respect to that input raises NotImplementedError 'Transpose rule (for reverse-mode "
                               "differentiation) for 'stop_gradient' not implemented' (jax-ml/jax#10994)")
                remedy = ("Drop the stop_gradient: tangents need none; to cut a derivative, return "
                          "`jnp.zeros_like(t)` for that part, or apply stop_gradient to the primals")
            elif form.loop:
                consequence = ("`jax.jvp` and `jax.jacfwd` work, but reverse mode transposes the tangent computation "
                               "and a while_loop has no transpose rule: `jax.grad` raises ValueError 'Reverse-mode "
                               "differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
                               "start/stop values' (jax-ml/jax#18311)")
                remedy = ("Compute the tangent with `lax.scan` or a `fori_loop` with static bounds, or solve for it "
                          "with `jax.lax.custom_linear_solve` (which transposes)")
            elif form.callback:
                consequence = ("`jax.jvp` and `jax.jacfwd` work when the callback computes a linear map, but reverse "
                               "mode transposes the tangent computation and a callback has no transpose rule: "
                               "`jax.grad`, `jax.jacrev` and `jax.vjp` raise ValueError 'Pure callbacks do not support "
                               "transpose' ('IO callbacks ...' for io_callback; jax-ml/jax#30401)")
                remedy = ("Have the callback compute the Jacobian (or the derivative's coefficients) from the primals "
                          "and multiply the tangent by it with jnp operations, or wrap the host operation in a "
                          "custom_vjp whose bwd calls the host's transpose")
            elif form.transpose:
                consequence = ("`jax.jvp` works, but reverse mode transposes the tangent computation and a custom_vjp "
                               "call has no transpose rule: `jax.grad` raises NotImplementedError 'Transpose rule "
                               "(for reverse-mode differentiation) for 'custom_vjp_call' not implemented' "
                               "(jax-ml/jax#19087)")
                remedy = "Write the tangent with jnp/lax operations, or call the custom_vjp's primal computation"
            elif form.affine:
                consequence = ("`jax.grad` ignores that term, but `jax.jvp` and `jax.jacfwd` add it to every result "
                               "(silently wrong)")
                remedy = "Drop the term, or return it with the primal output if it belongs to the value"
            else:
                consequence = ("`jax.grad` fails when JAX transposes it (NotImplementedError 'Transpose rule ... "
                               "not implemented', or an AssertionError), and `jax.jvp`/`jax.jacfwd` return values "
                               "that are silently wrong (they change with the tangent's scale)")
                remedy = ("Compute the nonlinear part from the primals and multiply the tangent by it (e.g. "
                          "`jnp.sign(x) * t` for `jnp.abs(t)`), or use a custom_vjp for a rule that must be "
                          "nonlinear in the cotangent")
            transposable = not (form.transpose or form.loop or form.stop or form.callback)
            what = "that is not linear in the input tangents" if transposable else "that JAX cannot transpose"
            self.report(form.node, f"the {kind} `{name}` of `{d.name}` returns a tangent {what}: "
                                   f"`{self.quote(form.node, 50)}` {form.why}. {consequence}. {remedy}")

    def _reaches(self, d: CustomDerivative, rule: RuleFunction, fn: FunctionNode, tangent: ast.expr, inner,
                 kind: str) -> None:
        """A nonlinear term the returned tangent is computed from, through steps vjplint does not read."""
        name = rule.name or getattr(fn, "name", "<lambda>")
        self.report(inner.node, f"the {kind} `{name}` of `{d.name}` returns the tangent `{self.quote(tangent, 40)}`, "
                                f"computed from `{self.quote(inner.node, 50)}`, which {inner.why}: unless the steps "
                                f"between discard it, the tangent is not linear in the input tangents, so `jax.grad` "
                                f"may fail when JAX transposes it (an AssertionError or NotImplementedError 'Transpose "
                                f"rule ... not implemented') and `jax.jvp`/`jax.jacfwd` give values that change with "
                                f"the tangent's scale. Compute the nonlinear part from the primals and multiply the "
                                f"tangent by it", severity=Severity.WARNING)
