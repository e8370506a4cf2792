from __future__ import annotations

import ast
from typing import Optional, Union

from vjplint.diagnostics import Severity
from vjplint.model.semantic import constant_value, named_function
from vjplint.rules.base import Rule

GRADS = frozenset({"jax.grad", "jax.value_and_grad"})
# Wrappers keeping the output: fixing arguments, compiling, rematerialising
PASS_THROUGH = frozenset({"functools.partial", "jax.jit", "jax.checkpoint", "jax.remat"})
# Calls whose result has rank >= 1 whatever their arguments (a literal list or tuple gives an axis)
STACKING = frozenset({"stack", "vstack", "hstack", "dstack", "column_stack", "concatenate", "outer"})
LITERAL_ARRAYS = frozenset({"array", "asarray"})
# Elementwise: the result broadcasts its arguments, so one argument of rank >= 1 gives rank >= 1
ELEMENTWISE = frozenset({
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "exp", "exp2", "log", "log1p",
    "log2", "log10", "expm1", "abs", "absolute", "sqrt", "cbrt", "square", "real", "imag", "conj", "conjugate",
    "sign", "negative", "reciprocal", "maximum", "minimum", "clip", "where", "power", "multiply", "add",
    "subtract", "divide", "true_divide", "sigmoid", "relu", "softplus", "gelu", "silu", "logaddexp",
})
ARRAY_MODULES = ("jax.numpy.", "numpy.", "jax.nn.")
ELEMENTWISE_ATTRIBUTES = frozenset({"real", "imag", "T", "mT"})
ELEMENTWISE_METHODS = frozenset({"conj", "conjugate", "astype", "clip"})
DEPTH = 6
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]


class GradOfNonscalarOutput(Rule):
    """## What it does
    Flags `jax.grad(f)` and `jax.value_and_grad(f)` (without `has_aux`), in a module defining a
    custom derivative, where `f` is a custom function or a def or lambda of the module (a helper
    calling one), also through `functools.partial(f, ...)` or `jax.jit(f)`, and every value `f` returns is
    provably not a scalar: a tuple, list or dict; `jnp.stack([...])`, `jnp.concatenate(...)`,
    `jnp.array([...])`; an elementwise expression (`*`, `+`, `jnp.sin`, `.real`, ...) with one of
    those in it, through names bound once in `f`, or a call of a custom function (its primal) or
    of a def of the module that returns one of those. Also where the output's rank shows only in
    the inputs the gradient function is called with (`jax.grad(model)(jnp.linspace(0, 1, 5))`):
    an array of rank >= 1 (an array constructor with a shape, `linspace`/`arange`, a list literal,
    random draws) passed, directly, through a name, a `*args` tuple or a parameter that every call
    of its function in the module gives one, to a function whose output keeps that input's axes
    (elementwise functions and arithmetic, matmuls, reductions over some axes, the module's
    functions and custom primals read at their arguments' ranks); the gradient function called
    where it is made, through `jax.jit`, or through a name bound to it. With `has_aux=True` the
    same is read from the first item of every returned pair `out, aux`, the one differentiated.

    ## Why is this bad?
    `jax.grad` differentiates a scalar-output function only. Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e43_grad_nonscalar.py`, census row E43 of
    `docs/facts/jax-errors.md`): an output of shape `(3,)` raises `TypeError: Gradient only
    defined for scalar-output functions. Output had shape: (3,).`; a tuple output raises
    `TypeError: Gradient only defined for scalar-output functions. Output was (...)`. The error
    is raised at the call, after the custom rules were traced.

    ## Example
    ```python
    def model(x):
        return jnp.stack([f(x), 2.0 * f(x)])

    slope = jax.grad(model)(1.0)
    ```

    ## Use instead
    Reduce the output first (`jax.grad(lambda x: jnp.sum(model(x)))`), or take the Jacobian
    (`jax.jacrev(model)`) or a vector-Jacobian product (`jax.vjp`).

    ## Fix safety
    No automatic fix: which reduction (or a Jacobian) is meant is the author's choice.
    """

    CODE = "VJP363"
    NAME = "grad-of-nonscalar-output"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

def model(x):
    return jnp.stack([f(x), 2.0 * f(x)])

slope = jax.grad(model)(1.0)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

def model(x):
    return jnp.sum(jnp.stack([f(x), 2.0 * f(x)]))

slope = jax.grad(model)(1.0)
''']

    def check(self) -> None:
        if not any(d.api == "jax" for d in self.model.derivatives):
            return
        index = self.model.index
        reported = set()
        for call in self.model.facts.calls_in(self.model.module):
            if (index.qualname(call.func) or "") not in GRADS or not call.args:
                continue
            if any(k.arg == "has_aux" or k.arg is None for k in call.keywords):
                continue
            target = call.args[0]
            while isinstance(target, ast.Call) and target.args and \
                    (index.qualname(target.func) or "") in PASS_THROUGH:  # `partial(f, ...)`, `jax.jit(f)`
                target = target.args[0]
            d = self.model.facts.derivative_named(target)
            fn = d.primal if d is not None else named_function(index, target)
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            evidence = self._returns_nonscalar(fn, DEPTH)
            if evidence is not None:
                self._report(call, target, evidence)
                reported.add(call)
        for app in self.model.facts.grad_applications():
            aux = app.keyword("has_aux")
            if app.transform in GRADS and app.grad not in reported and (aux is None or constant_value(self.model.index, aux) is True) \
                    and not app.mapped:  # under vmap the function sees the inputs less their mapped axis
                self._check_inputs(app, aux is not None)

    def _check_inputs(self, app, aux: bool) -> None:
        """The output's rank shown by the inputs the gradient function is called with."""
        d = self.model.facts.derivative_named(app.target)
        fn = d.primal if d is not None else named_function(self.model.index, app.target)
        bound = 0
        if fn is None:  # `obj.method` or an instance `obj` of a class of the module: `self` is bound
            fn, bound = self._method(app.target), 1
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        sig = self.model.signature(fn)
        params = sig.positional[bound:]
        if sig.vararg is not None or len(app.args) != len(params):
            return
        ranks = tuple((p, min(self.model.facts.least_rank(v) for v in options) if options else 0)
                      for p, options in zip(params, app.args))
        rank = self.model.facts.least_output_rank(fn, ((fn, tuple(sorted(ranks))),), 0, aux)
        shown = next(((p, options[0]) for (p, r), options in zip(ranks, app.args) if r >= 1), None)
        if rank < 1 or shown is None:
            return
        param, value = shown
        self.report(app.applied, (
            f"`{self.quote(app.grad, 40)}` is called with `{param}` = `{self.quote(value, 40)}` (line {value.lineno}), "
            f"an array of rank >= {dict(ranks)[param]}, and `{self.quote(app.target, 30)}` keeps its axes: the "
            f"{'first output (with `has_aux=True` the rest is aux)' if aux else 'output'} "
            f"has rank >= {rank}, not a scalar, and JAX raises `TypeError: Gradient only defined for scalar-output "
            "functions` at the call; reduce the output first (`jnp.sum(...)`), map the gradient over the axis "
            "(`jax.vmap(jax.grad(...))`) or take `jax.jacrev` for a non-scalar output"))

    def _method(self, target: ast.expr) -> Optional[ast.FunctionDef]:
        values = self.model.facts.values()
        owner, name = (target.value, target.attr) if isinstance(target, ast.Attribute) else (target, "__call__")
        cls = values.instance_class(owner)
        method = values.method_of(cls, name) if cls is not None else None
        if method is None or any((self.model.index.qualname(d) or "") in ("builtins.staticmethod", "builtins.classmethod")
                                 for d in method.decorator_list):
            return None
        return method

    def _own(self, fn: FunctionNode):
        if isinstance(fn, ast.Lambda):
            return list(ast.walk(fn.body))
        return self.model.facts.own_nodes(fn)

    def _returns_nonscalar(self, fn: FunctionNode, depth: int) -> Optional[ast.expr]:
        """The expression proving the output is not a scalar, when every return of `fn` has one."""
        if isinstance(fn, ast.Lambda):
            return self._nonscalar(fn.body, fn, depth)
        returns = [n for n in self._own(fn) if isinstance(n, ast.Return)]
        if not returns or any(r.value is None for r in returns):
            return None
        found = [self._nonscalar(r.value, fn, depth) for r in returns]
        return found[0] if all(e is not None for e in found) else None

    def _nonscalar(self, expr: ast.expr, fn: FunctionNode, depth: int) -> Optional[ast.expr]:
        """A part of `expr` that makes its value a pytree or an array of rank >= 1 (None: unknown)."""
        if depth <= 0:
            return None
        if isinstance(expr, (ast.Tuple, ast.List, ast.Dict)):
            return expr
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.MatMult):
                return None
            return self._nonscalar(expr.left, fn, depth - 1) or self._nonscalar(expr.right, fn, depth - 1)
        if isinstance(expr, ast.UnaryOp):
            return self._nonscalar(expr.operand, fn, depth - 1)
        if isinstance(expr, ast.Attribute) and expr.attr in ELEMENTWISE_ATTRIBUTES:
            return self._nonscalar(expr.value, fn, depth - 1)
        if isinstance(expr, ast.Name):
            value = self._bound_once(expr.id, fn)
            return self._nonscalar(value, fn, depth - 1) if value is not None else None
        if isinstance(expr, ast.Call):
            return self._call_nonscalar(expr, fn, depth)
        return None

    def _call_nonscalar(self, call: ast.Call, fn: FunctionNode, depth: int) -> Optional[ast.expr]:
        qualname = self.model.index.qualname(call.func) or ""
        module, _, name = qualname.rpartition(".")
        if (module + ".").startswith(ARRAY_MODULES) and module.split(".")[0] in ("jax", "numpy"):
            if name in STACKING and call.args and isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp)):
                return call
            if name in LITERAL_ARRAYS and call.args and isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp)):
                return call
            if name in ELEMENTWISE:
                for arg in call.args:
                    found = self._nonscalar(arg, fn, depth - 1)
                    if found is not None:
                        return found
            return None
        if isinstance(call.func, ast.Attribute) and call.func.attr in ELEMENTWISE_METHODS:
            return self._nonscalar(call.func.value, fn, depth - 1)
        d = self.model.facts.derivative_named(call.func)
        callee = d.primal if d is not None else named_function(self.model.index, call.func)
        if isinstance(callee, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and callee is not fn:
            return self._returns_nonscalar(callee, depth - 1)
        return None

    def _bound_once(self, name: str, fn: FunctionNode) -> Optional[ast.expr]:
        """The value `name` is assigned in `fn` when it is assigned exactly once, to a plain name."""
        if isinstance(fn, ast.Lambda) or name in {a.arg for a in fn.args.args + fn.args.kwonlyargs}:
            return None
        values = []
        for node in self._own(fn):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)) else [])
            for t in targets:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    values.append(node.value if isinstance(node, ast.Assign) and isinstance(t, ast.Name) else None)
        return values[0] if len(values) == 1 else None

    def _report(self, call: ast.Call, target: ast.expr, evidence: ast.expr) -> None:
        kind = ("a pytree (not one array)" if isinstance(evidence, (ast.Tuple, ast.List, ast.Dict))
                else "an array of rank >= 1")
        self.report(call, (
            f"`{self.quote(call.func, 25)}` differentiates `{self.quote(target, 30)}`, whose output is {kind}: "
            f"`{self.quote(evidence, 50)}` (line {evidence.lineno}) is not a scalar, and JAX raises "
            "`TypeError: Gradient only defined for scalar-output functions` at the call; reduce the output "
            "first (`jnp.sum(...)`) or take `jax.jacrev` / `jax.vjp` for a non-scalar output"))
