"""Where a function needs one of its parameters as a Python value (VJP110): called, annotated
`Callable`, or the whole test of an `if`/`while`/conditional expression, in the function or in a
function of the module it passes the value to (three calls deep). Read for a primal or a rule that
a tracing transformation receives (`facts/transforms.py`)."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, named_function

CALLABLE = frozenset({"typing.Callable", "collections.abc.Callable"})
Use = Tuple[ast.AST, str, str]  # (where, what the value is, the error JAX raises)
FUNCTION_ERROR = ("TypeError: a function is no jit argument (`Error interpreting argument to ... as an abstract "
                  "array ... not marked as static`, or `... is not a valid JAX type`)")


class PythonUses:
    def __init__(self, model: FileModel) -> None:
        self.model = model

    def annotated_callable(self, fn: FunctionNode, name: str) -> Optional[Use]:
        """The parameter's annotation when it says a function (`Callable`, `Callable[..., T]`):
        traced as an argument whether or not the body calls it."""
        arg = next((a for a in (*fn.args.posonlyargs, *fn.args.args) if a.arg == name), None)
        note = arg.annotation if arg is not None else None
        note = note.value if isinstance(note, ast.Subscript) else note
        if note is None or (self.model.index.qualname(note) or "") not in CALLABLE:
            return None
        return arg, "annotated as a function", ("TypeError: a function is no JAX argument (`Cannot interpret value "
                                                "of type <class 'function'> as an abstract array`)")

    def python_use(self, fn: FunctionNode, name: str, depth: int = 0) -> Optional[Use]:
        """Where `fn` calls `name` or tests it as a flag, here or in a function of the module it
        passes `name` to (three calls deep: `_route_fwd(x, flag)` then `if flag:` in `_sort_impl`)."""
        if self.rebound(fn, name):
            return None
        found = self._own_python_use(fn, name)
        if found is not None or depth >= 3:
            return found
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            callee = named_function(self.model.index, node.func)
            if callee is None or isinstance(callee, ast.Lambda) or callee is fn:
                continue
            params = self.model.signature(callee).positional
            inner = next((params[i] for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == name
                          and i < len(params) and not any(isinstance(b, ast.Starred) for b in node.args[:i])), None)
            inner = inner or next((k.arg for k in node.keywords if isinstance(k.value, ast.Name)
                                   and k.value.id == name and k.arg in params), None)
            if inner is None:
                continue
            use = self.python_use(callee, inner, depth + 1)
            if use is not None:
                where, what, error = use
                return where, what if " in `" in what else f"{what} in `{callee.name}`", error
        return None

    @staticmethod
    def _own_python_use(fn: FunctionNode, name: str) -> Optional[Use]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                return node, "called as a function", FUNCTION_ERROR
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and isinstance(node.test, ast.Name) and \
                    node.test.id == name:
                return node.test, "tested as a Python flag", "TracerBoolConversionError"
        return None

    @staticmethod
    def rebound(fn: FunctionNode, name: str) -> bool:
        targets: List[ast.AST] = [t for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.For))
                                  for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
        inner = [n for n in ast.walk(fn) if n is not fn and isinstance(n, (ast.FunctionDef, ast.Lambda))
                 and name in [a.arg for a in n.args.args]]
        return any(isinstance(t, ast.Name) and t.id == name for t in targets) or bool(inner)
