"""Decorators of the module that return a new object in place of the custom function (VJP341): a
`def` or lambda of one parameter whose every return is a function it defines or a call of a known
library function on its argument, or a decorator factory whose every return is such a decorator.
One that returns its argument (a registry, a tagger) is not."""

from __future__ import annotations

import ast
from typing import Callable, Optional

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import named_function


class LocalWrappers:
    def __init__(self, model: FileModel, known: Callable[[Optional[str]], bool]) -> None:
        self.model = model
        self.known = known

    def returns_new(self, expr: ast.expr) -> bool:
        """`expr` is a decorator of the module that returns a NEW object, never its argument: a `def` or lambda of
        one parameter whose every return is a function it defines (a call-logging closure, with or without
        `functools.wraps`, which copies the custom function's `__dict__`, not its class's `defvjp`) or a call of a
        known library function on it (`return jax.jit(fn)`); or a decorator factory of the module (`@traced("op")`)
        whose every return is such a decorator. One that returns its argument (a registry) is not."""
        if isinstance(expr, ast.Call):
            factory = named_function(self.model.index, expr.func)
            if not isinstance(factory, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return False
            returns = self.model.facts.returns_of(factory)
            inner = [self._local_def(factory, r.value) for r in returns]
            return bool(returns) and all(fn is not None and self._returns_new(fn) for fn in inner)
        fn = named_function(self.model.index, expr)
        return fn is not None and self._returns_new(fn)

    def _returns_new(self, fn: ast.AST) -> bool:
        params = fn.args.posonlyargs + fn.args.args  # type: ignore[attr-defined]
        if len(params) != 1:
            return False
        values = [fn.body] if isinstance(fn, ast.Lambda) else [r.value for r in self.model.facts.returns_of(fn)]
        return bool(values) and all(
            self._local_def(fn, v) is not None or isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.Name)
            and v.args[0].id == params[0].arg and self.known(self.model.index.qualname(v.func)) for v in values)

    def _local_def(self, fn: ast.AST, value: Optional[ast.expr]) -> Optional[ast.AST]:
        """The function `fn` defines and returns by name (`return inner`), bound once."""
        if not isinstance(value, ast.Name) or isinstance(fn, ast.Lambda):
            return None
        defs = {st.name: st for st in fn.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}  # type: ignore[attr-defined]
        found = defs.get(value.id)
        return found if found is not None and len(self.model.index.lookup(
            value.id, self.model.index.scope_of(found))) == 1 else None
