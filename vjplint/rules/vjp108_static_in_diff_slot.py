from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.infer import annotation_evidence, default_evidence, name_evidence
from vjplint.jaxapi import STATIC_ATTRIBUTES
from vjplint.model import Signature
from vjplint.rules.base import Rule
from vjplint.semantic import FunctionNode

CONVERSIONS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.range",
                         "operator.index"})
# jnp constructors whose first argument (or `num`) must be a concrete integer or shape.
SHAPE_FIRST = frozenset({"arange", "zeros", "ones", "empty", "full", "eye", "identity", "tri"})
FUNCTION_NAMESPACES = ("jax.numpy.", "jax.nn.", "jax.lax.", "jax.scipy.special.")
CONSTANTS = frozenset({"pi", "e", "inf", "nan", "euler_gamma", "newaxis", "PINF", "NINF", "NAN", "NZERO", "PZERO"})
SHAPE_SECOND = frozenset({"reshape", "broadcast_to", "tile", "repeat"})
# Transformations whose first argument is the function they call: `jax.vjp(op, a, b)` calls `op`.
CALLS_FIRST = frozenset({"jax.vjp", "jax.jvp", "jax.linearize", "jax.grad", "jax.value_and_grad", "jax.jacrev",
                         "jax.jacfwd", "jax.hessian", "jax.checkpoint", "jax.remat", "jax.vmap", "jax.jit"})
PYTREE_CALLABLES = frozenset({"jax.tree_util.Partial"})


class StaticInDiffSlot(Rule):
    """## What it does
    Flags a `jax.custom_vjp` / `jax.custom_jvp` function whose body (or a module-level helper it
    passes the argument to) uses an argument outside `nondiff_argnums` as a Python value:
    `int(n)`, `float(n)`, `range(n)`, `jnp.arange(n)`, a shape (`jnp.zeros(n)`,
    `x.reshape(n)`), or a Python `if`/`while`/`assert`/conditional expression on it (`is None`
    tests are fine: `None` has no leaves). The value is followed into names bound from it
    (`rows, cols = shape`, `n = shape[0]`) and into the fields of a NamedTuple of the module
    (`range(cfg.steps)`; a custom pytree such as an `eqx.Module` may keep static fields, so only
    NamedTuples count). Also flags a call passing a Python function (a lambda, a
    `def`, `functools.partial`) in such a position. A Python test is reported only for an argument meant to
    be static (annotated `int`/`bool`/..., defaulting to a Python constant, or named like `n`,
    `axis`, `num_*`): on data it is every jitted function's problem, not this one's.

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
        for d in self.model.derivatives:
            if d.api == "custom_gradient" and d.primal is not None and not d.bound_self:
                self._gradient_callables(d)
                continue
            if d.api != "jax" or d.primal is None or d.nondiff_unresolved or d.bound_self:
                continue
            sig = Signature.of(d.primal)
            nondiff_names = {p for i, p in enumerate(sig.positional) if i in d.nondiff}
            if "nondiff_argnames" in d.keywords:
                continue  # names resolved elsewhere; not followed here
            self._callable_arguments(d, sig)
            for i, param in enumerate(sig.positional):
                if i in d.nondiff or param in nondiff_names:
                    continue
                # A Python test on data is every jitted function's problem; on a value meant to be
                # static (annotated, defaulted or named so) it is this one's.
                self._meant_static = self._static_evidence(sig, param)
                self._record = self._holds_namedtuple(d, sig, i, param)
                found = self._python_use(d.primal, param, 0)
                if found is None:
                    continue
                node, what, where = found
                kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
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

    def _callable_arguments(self, d, sig: Signature) -> None:
        """A call passing a Python function (a lambda, a def, `functools.partial`) in a position
        outside nondiff_argnums: JAX rejects it as an argument at every call, eager included."""
        rules = {id(r.node) for _, r in self.model.facts.rules_of(d) if r.node is not None}
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        error = ("TypeError: Argument '<function ...>' of type <class 'function'> is not a valid JAX type"
                 if d.kind == "vjp" else "TypeError: Error interpreting argument to custom_jvp_call as a JAX value")
        for site in d.call_sites:
            if id(site.enclosing) in rules:
                continue
            for position, arg in enumerate(site.call.args):
                index = position + site.positional_offset
                if isinstance(arg, ast.Starred):
                    break
                if index in d.nondiff or index >= len(sig.positional) or not self._is_function(arg):
                    continue
                self.report(arg, (
                    f"{kind} `{d.name}` receives a Python function (`{self.quote(arg, 40)}`) in position {index} "
                    f"(`{sig.positional[index]}`), which is not in nondiff_argnums: {kind} passes every such "
                    f"argument to JAX as data, so this call raises {error}, eagerly too. Put position {index} "
                    f"in nondiff_argnums, or pass a pytree callable (`jax.tree_util.Partial`, or the "
                    f"`jax.closure_convert` form)"))

    def _gradient_callables(self, d) -> None:
        """A `jax.custom_gradient` function has no nondiff_argnums: every positional argument is
        passed to JAX as data. A call passing a Python function is reported there; a parameter the
        body calls, that no call here passes (or passes as a `jax.tree_util.Partial`), at the parameter."""
        sig = Signature.of(d.primal)
        error = "TypeError: Argument '<function ...>' of type <class '...'> is not a valid JAX type"
        passed: Dict[int, List[ast.expr]] = {}
        for site in d.call_sites:
            for position, arg in enumerate(site.call.args):
                index = position + site.positional_offset
                if isinstance(arg, ast.Starred):
                    break
                passed.setdefault(index, []).append(arg)
                if index >= len(sig.positional) or not self._is_function(arg):
                    continue
                self.report(arg, (
                    f"jax.custom_gradient `{d.name}` receives a Python function (`{self.quote(arg, 40)}`) in position "
                    f"{index} (`{sig.positional[index]}`): custom_gradient has no nondiff_argnums and passes every "
                    f"argument to JAX as data, so this call raises {error}, eagerly too. Close over the function "
                    f"instead (define `{d.name}` inside a factory that takes it, and pass only arrays), or pass a "
                    f"pytree callable (`jax.tree_util.Partial`)"))
        for i, param in enumerate(sig.positional):
            if self._rebound(d.primal, param):
                continue
            args = passed.get(i, [])
            if any(self._is_function(a) or self._is_pytree_callable(a) for a in args):
                continue  # reported at the call, or a callable JAX accepts
            call = self._called(d.primal, param)
            if call is None:
                continue
            node = next(a for a in (*d.primal.args.posonlyargs, *d.primal.args.args) if a.arg == param)
            self.report(node, (
                f"jax.custom_gradient `{d.name}` calls its argument `{param}` (`{self.quote(call, 40)}`), but "
                f"custom_gradient has no nondiff_argnums: every positional argument is passed to JAX as data, so a "
                f"Python function there may raise {error} at every call, eagerly too (jax-ml/jax#1366). Close over the "
                f"function instead (define `{d.name}` inside a factory that takes `{param}`, and pass only arrays), "
                f"or pass a pytree callable (`jax.tree_util.Partial`)"), severity=Severity.WARNING)

    def _called(self, fn: FunctionNode, param: str) -> Optional[ast.Call]:
        """The first call in `fn` (nested functions and lambdas included) of the parameter `param`
        itself, or of a transformation given it to call (`jax.vjp(param, ...)`)."""
        index = self.model.index
        calls = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
        for node in calls:
            if _is(node.func, param):
                name = node.func
            elif node.args and _is(node.args[0], param) and index.qualname(node.func) in CALLS_FIRST:
                name = node.args[0]
            else:
                continue
            found = index.resolve(param, index.scope_of(name))
            if found is not None and found[0].node is fn:
                return node
        return None

    def _is_pytree_callable(self, arg: ast.expr) -> bool:
        return isinstance(arg, ast.Call) and self.model.index.qualname(arg.func) in PYTREE_CALLABLES

    def _is_function(self, arg: ast.expr) -> bool:
        if isinstance(arg, ast.Lambda):
            return True
        if isinstance(arg, ast.Call):
            return self.model.index.qualname(arg.func) == "functools.partial"
        if isinstance(arg, ast.Attribute):  # `jnp.sin`, `jax.nn.relu`: JAX's functions, not its constants
            q = self.model.index.qualname(arg) or ""
            return q.startswith(FUNCTION_NAMESPACES) and q.rsplit(".", 1)[-1] not in CONSTANTS
        if isinstance(arg, ast.Name):
            bindings = self.model.index.lookup(arg.id, self.model.index.scope_of(arg))
            return bool(bindings) and all(b.kind == "def" and not getattr(b.node, "decorator_list", None)
                                          for b in bindings)
        return False

    def _static_evidence(self, sig: Signature, param: str) -> bool:
        evidence = [*annotation_evidence(self.model, sig.annotations.get(param), param), *name_evidence(param)]
        if param in sig.defaults:
            evidence.extend(default_evidence(self.model, sig.defaults[param]))
        return any(e.kind == "static" for e in evidence)

    def _python_use(self, fn: FunctionNode, param: str, depth: int) -> Optional[Tuple[ast.AST, str, str]]:
        """The first use of `param` in `fn` that needs a concrete Python value: the argument itself,
        a name unpacked or read from it (`rows, cols = shape`, `n = shape[0]`), an element
        (`shape[0]`), or a field of a NamedTuple argument (`cfg.steps`): under jit every leaf is traced."""
        if self._rebound(fn, param):
            return None
        self._aliases = self._aliases_of(fn, param) if depth == 0 else {}
        for node in self.model.facts.own_nodes(fn):
            found = self._needs_concrete(node, param)
            if found is not None:
                return node, found + self._through_alias(node), ""
            if depth == 0 and isinstance(node, ast.Call):
                inner = self._through_helper(node, param)
                if inner is not None:
                    return inner
        return None

    def _aliases_of(self, fn: FunctionNode, param: str) -> Dict[str, str]:
        """Names `fn` binds once from the argument: `rows, cols = shape`, `n = cfg.steps`."""
        scope = self.model.index.scopes.get(fn)
        out: Dict[str, str] = {}
        if scope is None or isinstance(fn, ast.Lambda):
            return out
        for node in self.model.facts.own_nodes(fn):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and self._derived(value, param, out, element=True):
                names = [target]
            elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts) \
                    and self._derived(value, param, out):
                names = list(target.elts)  # type: ignore[arg-type]
            else:
                continue
            for t in names:
                if t.id != param and len(scope.bindings.get(t.id, [])) == 1:  # type: ignore[attr-defined]
                    how = "unpacked from" if isinstance(target, (ast.Tuple, ast.List)) else "read from"
                    out[t.id] = f"`{t.id}` is {how} `{param}` at line {node.lineno}"  # type: ignore[attr-defined]
        return out

    def _derived(self, expr: ast.expr, param: str, aliases: Dict[str, str], element: bool = False) -> bool:
        """`expr` is the argument, an alias of it, or (with `element`) an element or NamedTuple field of it."""
        if isinstance(expr, ast.Name):
            return expr.id == param or expr.id in aliases
        if not element:
            return False
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            return self._derived(expr.value, param, aliases)
        if isinstance(expr, ast.Attribute) and expr.attr not in STATIC_ATTRIBUTES:
            return self._record and isinstance(expr.value, ast.Name) and expr.value.id == param
        return False

    def _uses(self, expr: ast.expr, param: str) -> bool:
        return self._derived(expr, param, self._aliases, element=True)

    def _shape_of(self, expr: ast.expr, param: str) -> bool:
        """The value itself, or a tuple/list literal holding it (`(n, 3)`)."""
        if self._uses(expr, param):
            return True
        return isinstance(expr, (ast.Tuple, ast.List)) and any(self._uses(e, param) for e in expr.elts)

    def _through_alias(self, node: ast.AST) -> str:
        used = [self._aliases[n.id] for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in self._aliases]
        return f" ({used[0]})" if used else ""

    def _holds_namedtuple(self, d, sig: Signature, position: int, param: str) -> bool:
        """The argument is a NamedTuple of this module (annotated so, or built at every call): its
        fields are pytree leaves, traced under jit (a custom pytree may keep static fields)."""
        annotation = sig.annotations.get(param)
        if annotation is not None:
            return self._namedtuple_class(annotation)
        rules = {id(r.node) for _, r in self.model.facts.rules_of(d) if r.node is not None}
        args = [site.call.args[position] for site in d.call_sites  # fwd calling the primal passes it on
                if position < len(site.call.args) and not site.positional_offset and id(site.enclosing) not in rules]
        return bool(args) and all(isinstance(a, ast.Call) and self._namedtuple_class(a.func) for a in args)

    def _namedtuple_class(self, expr: ast.expr) -> bool:
        if not isinstance(expr, ast.Name):
            return False
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        return len(bindings) == 1 and isinstance(bindings[0].node, ast.ClassDef) and any(
            (self.model.index.qualname(b) or "").endswith("NamedTuple") for b in bindings[0].node.bases)

    def _needs_concrete(self, node: ast.AST, param: str) -> Optional[str]:
        quote = self.quote
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            if _tests_value(node.test, param) and self._meant_static:
                kind = {ast.If: "an `if`", ast.While: "a `while`", ast.IfExp: "a conditional expression",
                        ast.Assert: "an `assert`"}[type(node)]
                return f"{kind} tests it (`{quote(node.test, 40)}`): TracerBoolConversionError under jit"
            return None
        if not isinstance(node, ast.Call):
            return None
        q = self.model.index.qualname(node.func) or ""
        args = node.args
        if q in CONVERSIONS and any(self._uses(a, param) for a in args):
            error = {"builtins.range": "TracerIntegerConversionError", "builtins.bool": "TracerBoolConversionError"}
            return f"`{quote(node, 40)}` ({error.get(q, 'ConcretizationTypeError')} under jit)"
        tail = q.rsplit(".", 1)[-1]
        if q.startswith("jax.numpy."):
            shape_args: List[ast.expr] = []
            if tail in SHAPE_FIRST and args:
                shape_args = [args[0]] + (list(args[1:2]) if tail == "arange" else [])
            elif tail in SHAPE_SECOND and len(args) > 1 and not (
                    tail == "repeat" and any(k.arg == "total_repeat_length" for k in node.keywords)):
                shape_args = [args[1]]  # `repeat(x, n, total_repeat_length=m)` takes a traced `n`
            shape_args += [k.value for k in node.keywords if k.arg in ("shape", "newshape", "num", "stop")]
            if any(self._shape_of(a, param) for a in shape_args):
                return f"`{quote(node, 40)}` takes it as a size or shape (it must be concrete under jit)"
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "reshape" and not q.startswith("jax")
                and any(self._shape_of(a, param) for a in args)):
            return f"`{quote(node, 40)}` takes it as a shape (it must be concrete under jit)"
        return None

    def _through_helper(self, call: ast.Call, param: str) -> Optional[Tuple[ast.AST, str, str]]:
        """`helper(..., param, ...)` with `helper` a module-level def: its use of the parameter."""
        if not isinstance(call.func, ast.Name):
            return None
        bindings = self.model.index.lookup(call.func.id, self.model.index.scope_of(call))
        if len(bindings) != 1 or bindings[0].kind != "def":
            return None
        helper = bindings[0].node
        if self.model.index.scope_of(helper) is not self.model.index.module_scope:
            return None
        positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]  # type: ignore[union-attr]
        for position, arg in enumerate(call.args):
            if _is(arg, param) and position < len(positional):
                found = self._python_use(helper, positional[position], 1)  # type: ignore[arg-type]
                if found is not None:
                    return call, found[1], f"`{helper.name}` at line {found[0].lineno}"  # type: ignore[union-attr]
        return None

    def _rebound(self, fn: FunctionNode, param: str) -> bool:
        """`param` is reassigned in `fn` (then uses need not be the argument)."""
        scope = self.model.index.scopes.get(fn)
        bindings = scope.bindings.get(param, []) if scope is not None else []
        return any(b.kind != "param" for b in bindings)


def _is(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _tests_value(test: ast.expr, name: str) -> bool:
    """The test reads the value of `name` (not only `is None`, its shape, type or length)."""
    for part in _parts(test):
        if _is(part, name):
            return True
        if isinstance(part, ast.Compare) and not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                                                     for op in part.ops):
            if any(_is(side, name) for side in (part.left, *part.comparators)):
                return True
    return False


def _parts(test: ast.expr) -> Iterator[ast.expr]:
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _parts(value)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _parts(test.operand)
    else:
        yield test

