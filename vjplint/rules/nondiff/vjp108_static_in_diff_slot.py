from __future__ import annotations

import ast
from typing import Dict, List

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.rules.nondiff._concrete import ConcreteUse, ConcreteUses, rebound
from vjplint.model.file_model import Signature
from vjplint.rules.nondiff._callables_passed import (MODULE_WORDS, called, container_leaves, element_called, is_function, is_pytree_callable,
                                            names_pytree_callable, saved_as_residual)
from vjplint.rules.base import Rule


class StaticInDiffSlot(Rule):
    """## What it does
    Flags a `jax.custom_vjp` / `jax.custom_jvp` function whose body (or a module-level helper it
    passes the argument to) uses an argument outside `nondiff_argnums` as a Python value:
    `int(n)`, `float(n)`, `range(n)`, `jnp.arange(n)`, a shape (`jnp.zeros(n)`,
    `x.reshape(n)`), a JAX function's static argument (`axis=`, `keepdims=`, `jnp.sum(x, axis)`,
    `lax.dot_general`'s dimension numbers, `lax.top_k`'s `k`; not a slot that defaults to None
    and that no call here fills), or a Python `if`/`while`/`assert`/conditional expression on it (`is None`
    tests are fine: `None` has no leaves). The value is followed into names bound from it
    (`rows, cols = shape`, `n = shape[0]`) and into the fields of a NamedTuple of the module
    (`range(cfg.steps)`; a custom pytree such as an `eqx.Module` may keep static fields, so only
    NamedTuples count). Also flags a call passing a Python function (a lambda, a
    `def`, `functools.partial`) in such a position, and, as a warning that says "may", a parameter
    in such a position that the primal calls (`f(x)`) when no call here passes a function there
    (flagged at the call), a `jax.tree_util.Partial` or an instance of a class (an equinox module
    is a callable pytree), and fwd does not save it in the residuals
    (residuals are JAX data: it is a callable pytree there); a parameter named like a callable pytree
    (`model`, `module`, `net`, `layer`, `params`...) is left alone. A Python test is reported only for an argument meant to
    be static (annotated `int`/`bool`/..., defaulting to a Python constant, named like `n`,
    `axis`, `num_*`, or given a Python flag, int, string or None by every call of the module
    outside the custom function's own rules): on data it is every jitted function's problem, not
    this one's.

    A `jax.custom_gradient` function has no nondiff_argnums: every positional argument is
    differentiable. A call passing it a Python function is flagged, and so (as a warning that says
    "may") is a parameter its body calls (`op(x)`, `jax.vjp(op, a, b)`) when no call here passes a
    function (flagged there) or a `jax.tree_util.Partial`.

    ## Why is this bad?
    Under `jax.jit` a custom_vjp or custom_jvp traces **every** argument outside
    `nondiff_argnums`, even one the caller marked static (`jit(static_argnums=...)`) or closed over
    as a Python constant. Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_static_in_diff.py`):
    eager calls, `grad` and `vmap` work, and every `jit` raises `ConcretizationTypeError`
    (`int`, `jnp.arange`), `TracerIntegerConversionError` (`range`), `TracerBoolConversionError`
    (`if`) or `TypeError: Shapes must be 1D sequences of concrete values` (`jnp.zeros`)
    (jax-ml/jax#11646, jax-ml/jax#8356). The same value in `nondiff_argnums` works everywhere.
    A Python function in such a position fails at every call, eager included (`TypeError: ... is
    not a valid JAX type`); a `jax.tree_util.Partial` is a pytree and works. The same holds for
    any positional argument of a `jax.custom_gradient` function (jax-ml/jax#1366, measured:
    `docs/facts/scripts/hazard_custom_gradient_jax1366.py`): a `def`, a lambda, a
    `functools.partial` or `jnp.multiply` raises `TypeError: ... is not a valid JAX type` eagerly,
    under jit and under grad; a `jax.tree_util.Partial` works, and so does a factory that takes the
    function and defines the custom_gradient inside, closing over it.

    ## Example
    ```python
    @jax.custom_vjp
    def int_power(z, n):
        return z ** int(n)
    ```

    ## Use instead
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def int_power(z, n):
        return z ** int(n)

    def int_power_bwd(n, z, g):   # nondiff values come first
        ...
    ```
    and for a `jax.custom_gradient`, close over the function:
    ```python
    def make_halved_grad(op):
        @jax.custom_gradient
        def halved_grad(a, b):
            out, op_vjp = jax.vjp(op, a, b)
            return out, lambda g: tuple(0.5 * c for c in op_vjp(g))
        return halved_grad
    ```

    ## Fix safety
    No automatic fix: moving the argument into `nondiff_argnums` changes bwd's signature.
    """

    CODE = "VJP108"
    NAME = "static-in-diff-slot"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp", b"custom_gradient")
    INVALID = ['''
import jax

@jax.custom_vjp
def int_power(z, n):
    return z ** int(n)

int_power.defvjp(lambda z, n: (int_power(z, n), z), lambda z, g: (g * z, None))
''']
    VALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def int_power(z, n):
    return z ** int(n)

int_power.defvjp(lambda z, n: (int_power(z, n), z), lambda n, z, g: (g * n * z ** (n - 1),))
''']

    def check(self) -> None:
        self._uses = ConcreteUses(self.model)  # vjplint.rules.nondiff._concrete: where an argument must be concrete

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.api == "custom_gradient" and d.primal is not None and not d.bound_self:
            self._gradient_callables(d)
            return
        if d.api != "jax" or d.primal is None or d.nondiff_unresolved or d.bound_self:
            return
        sig = self.model.signature(d.primal)
        nondiff_names = {p for i, p in enumerate(sig.positional) if i in d.nondiff}
        self._callable_arguments(d, sig)
        self._called_parameters(d, sig)
        for i, param in enumerate(sig.positional):
            if i in d.nondiff or param in nondiff_names:
                continue
            found = self._uses.first(d, sig, i, param)
            if found is None or found.need == "static" and self._only_none(d, sig, i, param):
                continue
            node, what = found.node, self._what(found)
            kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
            where = f"`{found.helper.name}` at line {found.helper_line}" if found.helper is not None else ""
            via = f" (in {where}, which `{d.name}` passes it to)" if where else ""
            if where:  # the use is in a helper: point at the parameter that belongs in nondiff_argnums
                node = next(a for a in (*d.primal.args.posonlyargs, *d.primal.args.args) if a.arg == param)
            self.report(node, (
                f"{kind} `{d.name}` uses its argument `{param}` (position {i}, not in nondiff_argnums) as a "
                f"Python value: {what}{via}. Under `jax.jit` {kind} traces every argument outside "
                f"nondiff_argnums, even one the caller marks static or closes over, so this raises there "
                f"(eager calls, grad and vmap work). Put position {i} in nondiff_argnums (bwd then receives "
                f"it first; a Python number, shape or flag belongs there)"))
            break

    def _what(self, use: ConcreteUse) -> str:
        """What the use is and what JAX raises there, with the name it went through."""
        at = use.at
        if use.need == "test":
            kind = {ast.If: "an `if`", ast.While: "a `while`", ast.IfExp: "a conditional expression",
                    ast.Assert: "an `assert`"}[type(at)]
            what = f"{kind} tests it (`{self.quote(at.test, 40)}`): TracerBoolConversionError under jit"  # type: ignore
        elif use.need == "conversion":
            error = {"builtins.range": "TracerIntegerConversionError", "builtins.bool": "TracerBoolConversionError"}
            what = f"`{self.quote(at, 40)}` ({error.get(use.qualname, 'ConcretizationTypeError')} under jit)"
        elif use.need == "static":
            what = f"`{self.quote(at, 40)}` takes it as a static argument (it must be concrete under jit)"
        elif use.need == "size":
            what = f"`{self.quote(at, 40)}` takes it as a size or shape (it must be concrete under jit)"
        else:
            what = f"`{self.quote(at, 40)}` takes it as a shape (it must be concrete under jit)"
        alias = use.alias
        if alias is None:
            return what
        how = "unpacked from" if alias.unpacked else "read from"
        return f"{what} (`{alias.name}` is {how} `{alias.param}` at line {alias.line})"

    def _only_none(self, d: CustomDerivative, sig: Signature, position: int, param: str) -> bool:
        """The slot defaults to None and no call here passes anything else: `axis=None` is an
        empty pytree, and a static argument left at None is no tracer."""
        default = sig.defaults.get(param)
        if not (isinstance(default, ast.Constant) and default.value is None):
            return False
        rules = {r.node for _, r in self.model.facts.rules_of(d) if r.node is not None}
        for site in d.call_sites:
            if site.enclosing in rules:  # fwd calling the primal passes its own parameter on
                continue
            index = position - site.positional_offset
            passed = [site.call.args[index]] if 0 <= index < len(site.call.args) else []
            passed += [k.value for k in site.call.keywords if k.arg == param]
            if any(isinstance(a, ast.Starred) for a in site.call.args[:index + 1]) or any(
                    not (isinstance(a, ast.Constant) and a.value is None) for a in passed):
                return False
        return True

    def _callable_arguments(self, d, sig: Signature) -> None:
        """A call passing a Python function (a lambda, a def, `functools.partial`) in a position
        outside nondiff_argnums: JAX rejects it as an argument at every call, eager included."""
        rules = {r.node for _, r in self.model.facts.rules_of(d) if r.node is not None}
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        error = ("TypeError: Argument '<function ...>' of type <class 'function'> is not a valid JAX type"
                 if d.kind == "vjp" else "TypeError: Error interpreting argument to custom_jvp_call as a JAX value")
        for site in d.call_sites:
            if site.enclosing in rules:
                continue
            for index, passed in self.model.facts.call_arguments(site.call, tuple(sig.positional), site.positional_offset):
                # a container literal or NamedTuple holding the function: JAX flattens it, the function is a leaf
                arg = next((a for a in container_leaves(self.model, passed) if is_function(self.model, a)), None)
                if index in d.nondiff or index >= len(sig.positional) or arg is None:
                    continue
                inside = f" inside `{self.quote(passed, 40)}`" if arg is not passed else ""
                self.report(arg, (
                    f"{kind} `{d.name}` receives a Python function (`{self.quote(arg, 40)}`){inside} in position {index} "
                    f"(`{sig.positional[index]}`), which is not in nondiff_argnums: {kind} passes every such "
                    f"argument to JAX as data, so this call raises {error}, eagerly too. Put position {index} "
                    f"in nondiff_argnums, or pass a pytree callable (`jax.tree_util.Partial`, or the "
                    f"`jax.closure_convert` form)"))

    def _called_parameters(self, d: CustomDerivative, sig: Signature) -> None:
        """A parameter outside nondiff_argnums that the primal calls (`f(x)`), when no call here
        passes a function (reported there) or a pytree callable: a Python function there is
        rejected at every call. A warning: a callable pytree (an `eqx.Module`, a
        `jax.tree_util.Partial`) is a valid argument, and a name like `model` says it may be one."""
        passed: Dict[int, List[ast.expr]] = {}
        for site in d.call_sites:
            for index, arg in self.model.facts.call_arguments(site.call, tuple(sig.positional), site.positional_offset):
                passed.setdefault(index, []).append(arg)
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        for i, param in enumerate(sig.positional):
            element = element_called(self.model, d.primal, param)  # `f = f[0]`: a callable in a container
            if i in d.nondiff or rebound(self.model, d.primal, param) and element is None \
                    or param.lower().endswith(MODULE_WORDS):
                continue
            given = passed.get(i, []) if element is None else [leaf for a in passed.get(i, [])
                                                               for leaf in container_leaves(self.model, a)]
            if any(is_function(self.model, a) or is_pytree_callable(self.model, a) or names_pytree_callable(self.model, a)
                   for a in given) or saved_as_residual(self.model, d, i):
                continue
            call = element or called(self.model, d.primal, param)
            if call is None:
                continue
            node = next(a for a in (*d.primal.args.posonlyargs, *d.primal.args.args) if a.arg == param)
            self.report(node, (
                f"{kind} `{d.name}` calls its argument `{param}` (`{self.quote(call, 40)}`, position {i}), which "
                f"is not in nondiff_argnums: {kind} passes every such argument to JAX as data, so a Python "
                f"function there may raise `TypeError: ... is not a valid JAX type` at every call, eagerly too. "
                f"Put position {i} in nondiff_argnums (the rules then receive it first), or pass a pytree "
                f"callable (`jax.tree_util.Partial`)"), severity=Severity.WARNING)

    def _gradient_callables(self, d) -> None:
        """A `jax.custom_gradient` function has no nondiff_argnums: every positional argument is
        passed to JAX as data. A call passing a Python function is reported there; a parameter the
        body calls, that no call here passes (or passes as a `jax.tree_util.Partial`), at the parameter."""
        sig = self.model.signature(d.primal)
        error = "TypeError: Argument '<function ...>' of type <class '...'> is not a valid JAX type"
        passed: Dict[int, List[ast.expr]] = {}
        for site in d.call_sites:
            for position, arg in enumerate(site.call.args):
                index = position + site.positional_offset
                if isinstance(arg, ast.Starred):
                    break
                passed.setdefault(index, []).append(arg)
                if index >= len(sig.positional) or not is_function(self.model, arg):
                    continue
                self.report(arg, (
                    f"jax.custom_gradient `{d.name}` receives a Python function (`{self.quote(arg, 40)}`) in position "
                    f"{index} (`{sig.positional[index]}`): custom_gradient has no nondiff_argnums and passes every "
                    f"argument to JAX as data, so this call raises {error}, eagerly too. Close over the function "
                    f"instead (define `{d.name}` inside a factory that takes it, and pass only arrays), or pass a "
                    f"pytree callable (`jax.tree_util.Partial`)"))
        for i, param in enumerate(sig.positional):
            if rebound(self.model, d.primal, param):
                continue
            args = passed.get(i, [])
            if any(is_function(self.model, a) or is_pytree_callable(self.model, a) for a in args):
                continue  # reported at the call, or a callable JAX accepts
            call = called(self.model, d.primal, param)
            if call is None:
                continue
            node = next(a for a in (*d.primal.args.posonlyargs, *d.primal.args.args) if a.arg == param)
            self.report(node, (
                f"jax.custom_gradient `{d.name}` calls its argument `{param}` (`{self.quote(call, 40)}`), but "
                f"custom_gradient has no nondiff_argnums: every positional argument is passed to JAX as data, so a "
                f"Python function there may raise {error} at every call, eagerly too (jax-ml/jax#1366). Close over the "
                f"function instead (define `{d.name}` inside a factory that takes `{param}`, and pass only arrays), "
                f"or pass a pytree callable (`jax.tree_util.Partial`)"), severity=Severity.WARNING)

