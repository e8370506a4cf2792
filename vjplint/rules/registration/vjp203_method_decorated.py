from __future__ import annotations

import ast
from typing import List, Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule

# Decorators that stop Python from passing the instance: the custom derivative works then.
NON_BINDING = ("builtins.staticmethod", "builtins.classmethod")


class MethodDecorated(Rule):
    """## What it does
    Flags `jax.custom_vjp` / `jax.custom_jvp` applied directly to an instance method (a function
    in a class body whose first parameter is `self`), when the method is called through an
    instance (`self.m(x)`, `obj.m(x)`) or not called as `Class.m(obj, x)` anywhere in the file.

    ## Why is this bad?
    `custom_vjp` and `custom_jvp` objects have no `__get__`, so they do not bind as methods:
    `obj.m(x)` calls the primal with `x` alone, and every call, eager included, raises

        TypeError: The input arguments to the custom_vjp-decorated function m could not be
        resolved to positional-only arguments. Binding failed with the error:
        missing a required argument: 'x'

    ## Example
    ```python
    class Scale:
        def __init__(self, w):
            self.w = w

        @jax.custom_vjp
        def __call__(self, x):
            return self.w * x
    ```

    ## Use instead
    A module-level custom function that takes the object explicitly (as a differentiable
    pytree, or in `nondiff_argnums` when it holds no arrays), called from the method; or
    `@staticmethod` stacked on top:
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def _scale(w, x):
        return w * x
    ...
    class Scale:
        def __call__(self, x):
            return _scale(self.w, x)
    ```

    ## Fix safety
    No automatic fix: where the object goes (differentiable argument or nondiff) depends on
    whether it holds arrays.
    """

    CODE = "VJP203"
    NAME = "method-decorated"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    # measured for JAX's object and nnx's (no `__get__` either); not for the others
    APIS = frozenset({"jax", "nnx", "custom_gradient"})
    INVALID = ['''
import jax

class Scale:
    def __init__(self, w):
        self.w = w

    @jax.custom_vjp
    def __call__(self, x):
        return self.w * x
''']
    VALID = ['''
import jax

class Scale:
    @staticmethod
    @jax.custom_vjp
    def apply(x):
        return 2 * x
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.class_node is None or d.primal is None or isinstance(d.primal, ast.Lambda):
            return
        if self._unbound(d):
            return
        positional = [a.arg for a in (*d.primal.args.posonlyargs, *d.primal.args.args)]
        if not positional or positional[0] != "self":
            return  # without `self` an unbound call `obj.m(x)` passes exactly what it needs
        instance_calls = self._instance_calls(d)
        if not instance_calls and self._class_calls(d):
            return  # only ever called as `Class.m(obj, x)`: works
        kind = d.label
        if instance_calls:
            where = f"`{self.quote(instance_calls[0].func)}(...)` at line {instance_calls[0].lineno} fails"
        else:
            where = "every call `obj(...)` fails" if d.name == "__call__" else f"every `obj.{d.name}(...)` fails"
        how = "wrapped in" if isinstance(d.anchor, ast.Assign) else "decorated with"
        self.report(d.anchor, (
            f"`{d.name}` is an instance method of `{d.class_node.name}` {how} `{kind}`: "
            f"{kind} objects have no `__get__`, so `self` is never passed and {where} with "
            f"TypeError 'could not be resolved to positional-only arguments ... missing a required "
            f"argument'. Move it to a module-level function that takes the object explicitly "
            f"(call it as `fn(self, x)`), or stack `@staticmethod` on top and drop `self`"))

    def _unbound(self, d: CustomDerivative) -> bool:
        fn = d.primal
        if isinstance(d.anchor, ast.Assign) or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        return any(self.model.index.qualname(dec) in NON_BINDING for dec in fn.decorator_list)

    def _instance_calls(self, d: CustomDerivative) -> List[ast.Call]:
        """Calls `self.m(...)` / `obj.m(...)` inside the class, or `x.m(...)` where x is no class."""
        assert d.class_node is not None
        found = []
        for node in self.model.index.of_type(ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == d.name:
                base = node.func.value
                if self._is_class_ref(base, d):
                    continue
                if self._is_self(base, d):
                    found.append(node)
        return found

    def _class_calls(self, d: CustomDerivative) -> bool:
        return any(isinstance(n.func, ast.Attribute) and n.func.attr == d.name
                   and self._is_class_ref(n.func.value, d) for n in self.model.index.of_type(ast.Call))

    def _is_class_ref(self, expr: ast.expr, d: CustomDerivative) -> bool:
        if not isinstance(expr, ast.Name):
            return False
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        return any(b.node is d.class_node for b in bindings)

    def _is_self(self, expr: ast.expr, d: CustomDerivative) -> bool:
        """`self` of a method of this class, or a name bound to `Class(...)`."""
        if not isinstance(expr, ast.Name):
            if isinstance(expr, ast.Call):
                return self._is_class_ref(expr.func, d)
            return False
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        for b in bindings:
            if b.kind == "param":
                method = self._method_of_param(b.node)
                if method is not None and self.model.index.parent(method) is d.class_node:
                    return True
            if b.kind == "assign" and isinstance(b.value, ast.Call) and self._is_class_ref(b.value.func, d):
                return True
        return False

    def _method_of_param(self, arg: ast.AST) -> Optional[ast.FunctionDef]:
        args = self.model.index.parent(arg)
        fn = self.model.index.parent(args) if args is not None else None
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = [*fn.args.posonlyargs, *fn.args.args]
            if positional and positional[0] is arg:
                return fn  # type: ignore[return-value]
        return None
