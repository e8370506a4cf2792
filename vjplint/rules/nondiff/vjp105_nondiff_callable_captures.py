from __future__ import annotations

import ast
from typing import Optional

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.facts import describe_traced
from vjplint.rules.base import Rule
from vjplint.rules.helpers import function_name
from vjplint.model.semantic import FunctionNode
from vjplint.facts.kinds import ARRAY, CALLABLE, MAYBE, RECORD, UNKNOWN, Kind
from vjplint.rules.nondiff._local_callables import captured_names, local_function, numeric_use, traced_instance_method


class NondiffCallableCaptures(Rule):
    """## What it does
    Flags a callable passed in a custom_vjp or custom_jvp nondiff position that captures a
    traced value: a lambda or local function inside a traced function capturing one of its
    variables, passed itself or read from a record, dict or tuple built there (`cfg.fn` with
    `cfg = Cfg(fn=lambda y: theta * y)`, `fns["act"]`), or bound by `functools.partial(f, lambda ...)`; a callable built anywhere (`jax.grad(objective)`, `functools.partial(f, v)`, a
    name bound to a lambda) whose captured value `vjplint.facts.value_kinds` follows to a tracer (through
    the module's callers); and, as "may", a closure over a parameter of an enclosing function
    that is not known to be traced, when the closure uses it as a number. A callable object (an
    instance of a class with `__call__`: an equinox Module, a dataclass, a plain class whose
    `__init__` stores its arguments) built from a traced value and passed in a nondiff position is
    reported too: its fields are what it captures; as "may", such an object built where nothing is
    traced, holding a parameter of a function (nothing marks it static) that its methods use as
    array data (`Affine(w)` with `self.weight * v`); likewise a `functools.partial` binding such a
    parameter to a function that uses it as array data (`partial(cubic, k)` with `k * x`). And, as
    "may", a callable capturing `self` of a class whose fields are annotated as arrays (a method's
    `lambda y: self.vector_field(y)` in an equinox Module), here or in another module of the run:
    fitting those arrays differentiates with respect to a closed-over value.

    A callable built in another module of the run (a kernel factory called inside the caller's
    jitted loss) and passed to a custom derivative defined here is reported at the definition,
    with the caller's file and line.

    ## Why is this bad?
    JAX's tracer check looks at pytree leaves only, and a function is one opaque leaf, so the
    captured tracer slips through. Differentiating with respect to the captured value raises
    `UnexpectedTracerError` ("an intermediate value ... escaped the scope of the
    transformation"), and with a `jit` inside the `grad` lowering fails with
    `TypeError: No constant handler for type: DynamicJaxprTracer`.

    ## Example
    ```python
    def outer(c, x):
        return apply(lambda x: c * jnp.sin(x), x)   # apply has nondiff_argnums=(0,)
    ```

    ## Use instead
    ```python
    def outer(c, x):
        fn, consts = jax.closure_convert(lambda x: c * jnp.sin(x), x)
        return apply(fn, x, *consts)
    ```

    ## Fix safety
    No automatic fix; `jax.closure_convert` needs the rule to accept the hoisted constants.
    """

    CODE = "VJP105"
    NAME = "nondiff-callable-captures"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)

apply.defvjp(lambda fn, x: (fn(x), x), lambda fn, x, g: jax.vjp(fn, x)[1](g))

@jax.grad
def outer(c):
    return apply(lambda x: c * jnp.sin(x), 1.0)
''']
    VALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)

apply.defvjp(lambda fn, x: (fn(x), x), lambda fn, x, g: jax.vjp(fn, x)[1](g))

@jax.grad
def outer(c):
    return apply(jnp.sin, c)
''']

    def check(self) -> None:
        self._values = self.model.facts.values()

    def check_derivative(self, d: CustomDerivative) -> None:
        self._from_other_modules(d)
        for site in [*d.call_sites, *self.model.facts.partial_sites(d)]:  # a partial's bound arguments too
            traced = self.model.traced.get(site.enclosing) if site.enclosing is not None else None
            for position, name in d.nondiff_names():
                arg = self.model.facts.argument_at(site.call, position, name)
                if arg is None:
                    continue
                fn = local_function(self.model, arg, site.enclosing) if traced is not None else None
                captured = [c for c in captured_names(self.model, fn, site.enclosing)  # type: ignore
                            if c not in traced.static_params] if fn is not None else []  # type: ignore[union-attr]
                if captured:
                    what = "lambda" if isinstance(fn, ast.Lambda) else f"function `{function_name(fn)}`"
                    if isinstance(arg, (ast.Attribute, ast.Subscript)):  # read from a record or dict built here
                        what = f"{what} `{self.model.quote(arg, 30)}`"
                    self.report(arg, f"the {what} passed as nondiff `{name}` of `{d.name}` captures "
                                     f"`{captured[0]}`, a variable of {describe_traced(traced)}: "  # type: ignore
                                     f"differentiating with respect to it raises UnexpectedTracerError, and "
                                     f"grad of a jit fails with 'No constant handler'. Use "
                                     f"`jax.closure_convert` and pass the constants as arguments")
                    continue
                held = traced_instance_method(self.model, arg) if traced is None else None
                if held is not None:
                    method, field, built, why = held
                    self.report(arg, f"the bound method `{self.model.quote(arg, 40)}` passed as nondiff `{name}` of "
                                     f"`{d.name}` reads `self.{field}`, and `{self.model.quote(built, 40)}` (line "
                                     f"{built.lineno}) holds a traced value there ({why}): differentiating with respect to it "
                                     f"raises {_may_raise(d.kind)}. Pass the object's arrays as "
                                     f"differentiable arguments, or `jax.closure_convert` the method and pass the "
                                     f"constants as arguments")
                    continue
                kind = self._values.of(arg)
                if kind.tag == CALLABLE and kind.captures:
                    self._flowed(d.name, d.kind, name, arg, kind, site.enclosing, traced is None)
                elif kind.tag == RECORD and self.model.facts.is_callable_class(kind.node):
                    if d.kind == "vjp" and traced is not None and \
                            self.model.facts.traced_reason(arg, site.enclosing, traced) is not None:
                        continue  # VJP104 reports a traced value at a custom_vjp call
                    if not self._callable_object(d.name, d.kind, name, arg, kind) and traced is None:
                        self._object_may(d.name, d.kind, name, arg, kind)

    def _callable_object(self, owner: str, kind_of: str, name: str, arg: ast.expr, kind: Kind) -> bool:
        """An instance of a class with `__call__` (an equinox Module, a dataclass, a plain class
        whose `__init__` stores it) built here from a traced value: its fields are what it
        captures. True when reported."""
        leaf = kind.traced_leaf()
        if leaf is None:
            return False
        where, why = leaf
        if kind.why and why.startswith(kind.why + "; "):  # the object's own binding is quoted already
            why = why[len(kind.why) + 2:]
        cls = kind.node.name  # type: ignore[union-attr]
        if kind_of == "jvp":
            fails = ("custom_jvp stop-gradients nondiff arguments, so the derivative with respect to it is silently "
                     "zero, and where the call is staged (a jit inside the grad, scan, cond) JAX raises "
                     "UnexpectedTracerError or 'No constant handler'")
        else:
            fails = ("custom_vjp rejects tracers in nondiff positions (UnexpectedTracerError), and a jit inside the "
                     "grad fails with 'No constant handler'")
        quoted = self.model.quote(arg, 40)
        built = f" ({kind.why})" if kind.why and kind.why != f"`{quoted}`" else ""
        self.report(arg, f"the callable `{cls}` object `{quoted}`{built} passed as "
                         f"nondiff `{name}` of `{owner}` holds `{cls}{where}`, a traced value ({why}): {fails}. "
                         f"Pass it as a differentiable argument (an equinox Module or registered pytree can be one) and "
                         f"use its tangent/cotangent in the rule, or `jax.closure_convert` its call and pass the "
                         f"constants as arguments")
        return True

    def _object_may(self, owner: str, kind_of: str, name: str, arg: ast.expr, kind: Kind) -> None:
        """A callable object built where nothing is traced, holding a parameter of a function
        (nothing marks it static) that its methods use as array data: a caller differentiating
        that parameter makes the object carry a tracer past JAX's nondiff check."""
        held = self.model.facts.held_parameter(kind)
        if held is None:
            return
        self.report(arg, f"the callable `{held.cls.name}` object `{self.model.quote(arg, 40)}` passed as nondiff "
                         f"`{name}` of `{owner}` holds `{held.cls.name}.{held.field}`, which comes from "
                         f"`{held.param}`, a parameter of `{held.function}` ({held.chain}), and `{held.cls.name}` "
                         f"uses it as array data (`{self.model.quote(held.use, 40)}`): if `{held.function}` is "
                         f"differentiated with respect to `{held.param}`, JAX may raise {_may_raise(kind_of)}, or "
                         f"the gradient may go around the custom rule. Pass the object's arrays as differentiable "
                         f"arguments (an equinox Module or registered pytree can be one), or `jax.closure_convert` "
                         f"its call and pass the constants as arguments")

    def _from_other_modules(self, d) -> None:
        """A caller in another module of the run passing, in a nondiff slot, a callable that
        captures a tracer: reported at the definition with the caller's chain, once."""
        for call in self.model.facts.external_calls(d.name, d.anchor):
            for position, name in d.nondiff_names():
                arg = call.arg(position, name)
                if arg is not None and arg.tag == "callable" and arg.capture_may and not arg.capture_traced:
                    built = f" ({arg.why})" if arg.why else ""
                    if arg.capture_may.startswith("binds "):  # a partial binding a parameter (bound_parameter)
                        self.report(d.anchor, f"the callable `{arg.quoted}`{built} passed as nondiff `{name}` of "
                                              f"`{d.name}` at {call.where} {arg.capture_may}, JAX may raise "
                                              f"{_may_raise(d.kind)}, or the gradient may go around the custom "
                                              f"rule. Pass the bound value as a differentiable argument, or "
                                              f"`jax.closure_convert` the callable and pass the constants as "
                                              f"arguments", severity=Severity.WARNING)
                        return
                    verb = "captures" if arg.capture_may.startswith("`self`") else "holds"
                    self.report(d.anchor, f"the callable `{arg.quoted}`{built} passed as nondiff `{name}` of "
                                          f"`{d.name}` at {call.where} {verb} {arg.capture_may}: if a caller "
                                          f"differentiates with respect to that object's arrays (as when fitting "
                                          f"its parameters), JAX may raise {_may_raise(d.kind)}, or the gradient "
                                          f"may go around the custom rule. Pass the object's arrays as differentiable "
                                          f"arguments, or `jax.closure_convert` the callable and pass the constants "
                                          f"as arguments", severity=Severity.WARNING)
                    return
                if arg is None or arg.tag != "callable" or not arg.capture_traced:
                    continue
                built = f" ({arg.why})" if arg.why else ""
                verb = "holds" if "." in arg.capture else "captures"  # an object's field: `Scale.gain`
                self.report(d.anchor, f"the callable `{arg.quoted}`{built} passed as nondiff `{name}` of `{d.name}` "
                                      f"at {call.where} {verb} `{arg.capture}`, a traced value "
                                      f"({arg.capture_traced}): differentiating with respect to it raises "
                                      f"UnexpectedTracerError ('Encountered an unexpected tracer') or "
                                      f"CustomVJPException ('Detected differentiation of a custom_{d.kind} function "
                                      f"with respect to a closed-over value'), and grad of a jit fails with 'No "
                                      f"constant handler'. Use `jax.closure_convert` and pass the constants as "
                                      f"arguments")
                return

    def _flowed(self, owner: str, kind_of: str, name: str, arg: ast.expr, kind: Kind,
                enclosing: Optional[FunctionNode], untraced: bool) -> None:
        """A callable whose captures `vjplint.facts.value_kinds` followed: a capture known to be a tracer is
        an error; a parameter of an enclosing function that is not known to be traced, used as a
        number inside the callable, may be one (when that function is differentiated)."""
        what = f"`{self.model.quote(arg, 40)}`"
        for cname, ckind in kind.captures:
            if ckind.traced and untraced:  # in a traced caller VJP104 names the closure
                self.report(arg, f"the callable {what} passed as nondiff `{name}` of `{owner}` captures `{cname}`, "
                                 f"a traced value ({ckind.traced}): differentiating with respect to it raises "
                                 f"UnexpectedTracerError ('Encountered an unexpected tracer') or CustomVJPException "
                                 f"('Detected differentiation of a custom_{kind_of} function with respect to a "
                                 f"closed-over value'). Use `jax.closure_convert` and pass the constants as "
                                 f"arguments")
                return
        if not untraced or enclosing is None or kind.node is None:
            return
        values = self.model.facts.values()
        for cname, ckind in kind.captures:
            fields = values.array_fields(ckind.node) if cname == "self" and ckind.tag == "module" and \
                ckind.node is not None else []
            if fields:
                self.report(arg, f"the callable {what} passed as nondiff `{name}` of `{owner}` captures `self`, whose "
                                 f"field `{fields[0][0]}` is annotated `{fields[0][1]}`: if a caller differentiates "
                                 f"with respect to the object's arrays, JAX may raise {_may_raise(kind_of)}, or the "
                                 f"gradient may go around the custom rule. Pass the object's arrays as "
                                 f"differentiable arguments, or `jax.closure_convert` the callable and pass the "
                                 f"constants as arguments")
                return
        bound = self.model.facts.bound_parameter(kind)
        if bound is not None:
            self.report(arg, f"the callable {what} passed as nondiff `{name}` of `{owner}` binds `{bound.param}` to "
                             f"`{bound.target}` of `{function_name(kind.node)}` ({bound.chain}), which uses it as "
                             f"array data (`{self.model.quote(bound.use, 40)}`): if `{bound.function}` is "
                             f"differentiated with respect to `{bound.param}`, JAX may raise "
                             f"{_may_raise(kind_of)}, or the gradient may go around the custom rule. Pass "
                             f"`{bound.param}` as a differentiable argument of `{owner}`, or `jax.closure_convert` "
                             f"the callable and pass the constants as arguments")
            return
        for cname, ckind in kind.captures:
            # The function whose parameter it is: here, or the caller that built the callable and passed
            # it on through a wrapper (`my_simps(lambda z: f(z, w), a, b)` calls the custom function).
            owner_fn = ckind.origin[0] if ckind.origin is not None and ckind.origin[1] == cname else enclosing
            scope = self.model.index.scopes.get(owner_fn)
            bindings = scope.bindings.get(cname, []) if scope is not None else []
            if not bindings or any(b.kind != "param" for b in bindings) or ckind.tag not in (UNKNOWN, ARRAY, MAYBE):
                continue
            use = numeric_use(self.model, kind.node, cname)
            if use is None:
                continue
            built = f" ({kind.why})" if owner_fn is not enclosing and kind.why else ""
            self.report(arg, f"the callable {what}{built} passed as nondiff `{name}` of `{owner}` captures `{cname}`, a "
                             f"parameter of `{function_name(owner_fn)}` used as a number in `{use}`: if "
                             f"`{function_name(owner_fn)}` is differentiated with respect to `{cname}`, JAX may raise "
                             f"(UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a "
                             f"custom_{kind_of} function with respect to a closed-over value') or the gradient may go "
                             f"around the custom rule. Use "
                             f"`jax.closure_convert` and pass the constants as arguments")
            return


def _may_raise(kind_of: str) -> str:
    """What JAX 0.10.2 raises when a closed-over value is differentiated (no custom_jvp variant of
    CustomVJPException exists: jax-facts §9)."""
    if kind_of == "jvp":
        return "UnexpectedTracerError ('Encountered an unexpected tracer')"
    return ("UnexpectedTracerError, or CustomVJPException ('Detected differentiation of a custom_vjp function with "
            "respect to a closed-over value')")
