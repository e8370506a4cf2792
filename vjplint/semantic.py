"""Scopes, bindings and qualified names over an `ast` tree (a small pyflakes-style model).

Names are resolved the way Python resolves them: a `custom_vjp` that is a local function or
an assignment is not JAX's, however it is spelled; `cv` after `from jax import custom_vjp as
cv` is `jax.custom_vjp`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Union

ScopeNode = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPE_TYPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass
class Binding:
    kind: str  # "import", "def", "class", "assign", "param", "other"
    node: ast.AST
    qualname: Optional[str] = None  # for imports
    value: Optional[ast.expr] = None  # for simple `name = value` assignments


@dataclass
class Scope:
    node: ScopeNode
    parent: Optional["Scope"]
    bindings: Dict[str, List[Binding]] = field(default_factory=dict)
    globals_: set = field(default_factory=set)
    nonlocals: set = field(default_factory=set)

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, FUNCTION_TYPES)

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


class SemanticIndex:
    """Parent links, scopes and bindings for one module, built in a single walk."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self.parents: Dict[ast.AST, ast.AST] = {}
        self.scopes: Dict[ast.AST, Scope] = {}
        self._node_scope: Dict[ast.AST, Scope] = {}
        self.module_scope = Scope(module, None)
        self.scopes[module] = self.module_scope
        self._walk(module, self.module_scope)

    # -- building -------------------------------------------------------------------------
    def _walk(self, root: ast.AST, scope: Scope) -> None:
        stack = [(root, scope)]
        parents = self.parents
        while stack:
            node, current = stack.pop()
            for child in ast.iter_child_nodes(node):
                parents[child] = node
                child_scope = self._enter(child, current, node)
                stack.append((child, child_scope))

    def _enter(self, node: ast.AST, scope: Scope, parent: ast.AST) -> Scope:
        """Record what `node` binds in `scope`; return the scope its children live in."""
        self._node_scope[node] = scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.bind(node.name, Binding("class" if isinstance(node, ast.ClassDef) else "def", node))
            inner = Scope(node, scope)
            self.scopes[node] = inner
            if not isinstance(node, ast.ClassDef):
                self._bind_params(node.args, inner)
            return inner
        if isinstance(node, ast.Lambda):
            inner = Scope(node, scope)
            self.scopes[node] = inner
            self._bind_params(node.args, inner)
            return inner
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._bind_import(node, scope)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, scope, node, node.value if len(node.targets) == 1 else None)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            self._bind_target(node.target, scope, node, node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, ast.NamedExpr):
            target_scope = scope
            while isinstance(target_scope.node, ast.Lambda) is False and target_scope.is_class:
                target_scope = target_scope.parent or target_scope
            self._bind_target(node.target, target_scope, node, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._bind_target(node.target, scope, node, None)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, scope, node, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.bind(node.name, Binding("other", node))
        elif isinstance(node, ast.Global):
            scope.globals_.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.nonlocals.update(node.names)
        return scope

    def _bind_params(self, args: ast.arguments, scope: Scope) -> None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            scope.bind(arg.arg, Binding("param", arg))
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                scope.bind(arg.arg, Binding("param", arg))

    def _bind_target(self, target: ast.AST, scope: Scope, stmt: ast.AST, value: Optional[ast.expr]) -> None:
        if isinstance(target, ast.Name):
            scope.bind(target.id, Binding("assign", stmt, value=value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element, scope, stmt, None)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, scope, stmt, None)

    def _bind_import(self, node: Union[ast.Import, ast.ImportFrom], scope: Scope) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    scope.bind(alias.asname, Binding("import", node, qualname=alias.name))
                else:
                    top = alias.name.split(".")[0]
                    scope.bind(top, Binding("import", node, qualname=top))
            return
        base = "." * (node.level or 0) + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue
            qualname = f"{base}.{alias.name}" if node.module else f"{base}{alias.name}"
            scope.bind(alias.asname or alias.name, Binding("import", node, qualname=qualname))

    # -- queries --------------------------------------------------------------------------
    def scope_of(self, node: ast.AST) -> Scope:
        """The scope in which `node`'s names are looked up."""
        return self._node_scope.get(node, self.module_scope)

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(node)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        current = self.parents.get(node)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def enclosing_function(self, node: ast.AST) -> Optional[FunctionNode]:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, FUNCTION_TYPES):
                return ancestor  # type: ignore[return-value]
        return None

    def lookup(self, name: str, scope: Scope) -> List[Binding]:
        """Bindings `name` may refer to from `scope` (Python's LEGB, class scopes skipped)."""
        if name in scope.globals_:
            return self.module_scope.bindings.get(name, [])
        current: Optional[Scope] = scope
        first = True
        while current is not None:
            if first or not current.is_class:
                found = current.bindings.get(name)
                if found:
                    return found
            first = False
            current = current.parent
        return []

    def qualname(self, expr: ast.AST, scope: Optional[Scope] = None, _depth: int = 0) -> Optional[str]:
        """`jax.custom_vjp` for any spelling that resolves to it; builtins as `builtins.x`."""
        if _depth > 8:
            return None
        if scope is None:
            scope = self.scope_of(expr)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value, scope, _depth + 1)
            return f"{base}.{expr.attr}" if base else None
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.lookup(expr.id, scope)
        if not bindings:
            return f"builtins.{expr.id}"
        names = set()
        for binding in bindings:
            if binding.kind == "import":
                names.add(binding.qualname)
            elif binding.kind == "assign" and isinstance(binding.value, (ast.Name, ast.Attribute)):
                names.add(self.qualname(binding.value, self.scope_of(binding.node), _depth + 1))
            else:
                return None
        return names.pop() if len(names) == 1 else None
