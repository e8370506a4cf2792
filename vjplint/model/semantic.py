"""Scopes, bindings and qualified names over an `ast` tree (a small pyflakes-style model).

Names are resolved the way Python resolves them: a `custom_vjp` that is a local function or
an assignment is not JAX's, however it is spelled; `cv` after `from jax import custom_vjp as
cv` is `jax.custom_vjp`. Also here: the node walks every analysis shares (`child_nodes`, `walk`,
`own_nodes`) and the value of constant expressions (`constant_value`).

Facts about one node that many analyses ask for (`own_nodes`, a function's `Signature`) are
kept in the file's tables keyed by the node, `SemanticIndex.of_node` (`model.facts.own_nodes`,
`model.signature`); facts about the model in `vjplint.facts.Facts` (CONTRIBUTING.md, "Memos").
Nothing is kept on the nodes. A kept value is shared, never to be changed by its reader.
"""

from __future__ import annotations

import ast

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar, Union

from vjplint.syntax.walk import _CHILDREN, _no_children, child_nodes, walk  # noqa: F401 - re-exported: the model's users import the walks from here too

ScopeNode = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
N = TypeVar("N", bound=ast.AST)
V = TypeVar("V")

# The node types `_enter` does anything for; every other node just inherits its parent's scope.
_BINDING_TYPES = frozenset({
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Import, ast.ImportFrom, ast.Assign,
    ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension, ast.With,
    ast.AsyncWith, ast.ExceptHandler, ast.Global, ast.Nonlocal,
})


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NESTED_SCOPE_SET = frozenset(_NESTED_SCOPES)


def own_nodes(fn: FunctionNode) -> List[ast.AST]:
    """The nodes of `fn`'s own body, depth first: a nested def, lambda or class appears but not
    its inside (that runs when it is called, not as part of `fn`). Expression contexts left out.
    Computed on each call: `model.facts.own_nodes(fn)` (`SemanticIndex.own_nodes`) keeps it per
    file (rules, facts and the fix planner ask of the same functions many times)."""
    stack: List[ast.AST] = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    out: List[ast.AST] = []
    pop, add, extend, children_of = stack.pop, out.append, stack.extend, _CHILDREN
    while stack:
        node = pop()
        add(node)
        cls = node.__class__
        if cls not in _NESTED_SCOPE_SET:
            try:
                extend(children_of[cls](node))
            except (KeyError, AttributeError):
                extend(child_nodes(node))
    return out


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class Binding:
    """One binding of a name in a scope."""

    kind: str  # "import", "def", "class", "assign", "param", "other"
    node: ast.AST
    qualname: Optional[str] = None  # for imports
    value: Optional[ast.expr] = None  # for simple `name = value` assignments


@dataclass(eq=False)  # hashed by identity: a key of the facts' memos
class Scope:
    """A module, class, function or comprehension scope and its bindings."""

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

    def chain(self) -> Iterator["Scope"]:
        """This scope and the scopes enclosing it, innermost first (class scopes included)."""
        current: Optional[Scope] = self
        while current is not None:
            yield current
            current = current.parent


class SemanticIndex:
    """Parent links, scopes and bindings for one module, built in a single walk."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self.parents: Dict[ast.AST, ast.AST] = {}
        self.scopes: Dict[ast.AST, Scope] = {}
        self._node_scope: Dict[ast.AST, Scope] = {}
        self.module_scope = Scope(module, None)
        self.scopes[module] = self.module_scope
        self._nodes: Optional[List[ast.AST]] = None
        self._kids: Optional[Dict[ast.AST, List[ast.AST]]] = {}  # children of inner nodes, until `nodes`
        self._by_type: Optional[Dict[type, List[ast.AST]]] = None
        self._names: Optional[Dict[str, List[ast.Name]]] = None
        self._attributes: Optional[Dict[str, List[ast.Attribute]]] = None
        self._qualnames: Dict[ast.AST, Optional[str]] = {}
        # Facts of one node (its own nodes, a function's signature), by what computes them, then
        # by the node: `of_node`.
        self._of_node: Dict[Callable[[Any], Any], Dict[ast.AST, Any]] = {}
        self._walk(module, self.module_scope)

    def of_node(self, compute: Callable[[N], V], node: N) -> V:
        """`compute(node)`, computed once per node of this file and kept (the memo of facts that
        depend on one node alone; the node is the key)."""
        table = self._of_node.get(compute)
        if table is None:
            table = self._of_node[compute] = {}
        try:
            return table[node]
        except KeyError:
            value = table[node] = compute(node)
            return value

    def own_nodes(self, fn: FunctionNode) -> List[ast.AST]:
        """`own_nodes(fn)`, kept: the list is shared, never to be changed."""
        return self.of_node(own_nodes, fn)

    @property
    def nodes(self) -> List[ast.AST]:
        """Every node of the module in `ast.walk` order (expression contexts left out), computed
        once: iterate this instead of calling `ast.walk(module)` again."""
        if self._nodes is None:
            kids, nodes = self._kids or {}, [self.module]
            children_of = kids.get
            for node in nodes:  # breadth first over the children `_walk` recorded (the list grows)
                children = children_of(node)
                if children:
                    nodes.extend(children)
            self._nodes, self._kids = nodes, None
        return self._nodes

    def of_type(self, *types: type) -> List[ast.AST]:
        """The module's nodes of exactly these types, in `ast.walk` order (cached per type)."""
        if self._by_type is None:
            by_type: Dict[type, List[ast.AST]] = {}
            bucket_of = by_type.get
            for node in self.nodes:
                bucket = bucket_of(node.__class__)
                if bucket is None:
                    by_type[node.__class__] = [node]
                else:
                    bucket.append(node)
            self._by_type = by_type
        if len(types) == 1:
            return self._by_type.get(types[0], [])
        present = [t for t in types if t in self._by_type]
        if len(present) <= 1:  # (FunctionDef, AsyncFunctionDef) in a module without `async def`: no walk
            return self._by_type[present[0]] if present else []
        wanted = set(types)
        return [node for node in self.nodes if node.__class__ in wanted]

    def names(self, identifier: str) -> List[ast.Name]:
        """Every `ast.Name` spelled `identifier` in the module (any context), in `ast.walk` order."""
        if self._names is None:
            names: Dict[str, List[ast.Name]] = {}
            for node in self.of_type(ast.Name):
                names.setdefault(node.id, []).append(node)  # type: ignore[attr-defined]
            self._names = names
        return self._names.get(identifier, [])

    def attributes(self, attr: str) -> List[ast.Attribute]:
        """Every `ast.Attribute` accessing `.attr` in the module (any context), in `ast.walk` order."""
        if self._attributes is None:
            attributes: Dict[str, List[ast.Attribute]] = {}
            for node in self.of_type(ast.Attribute):
                attributes.setdefault(node.attr, []).append(node)  # type: ignore[attr-defined]
            self._attributes = attributes
        return self._attributes.get(attr, [])

    # -- building -------------------------------------------------------------------------
    def _walk(self, root: ast.AST, scope: Scope) -> None:
        stack = [(root, scope)]
        parents = self.parents
        node_scope = self._node_scope
        kids = self._kids
        children_of = _CHILDREN
        children_get, binding_types, enter, push = _CHILDREN.get, _BINDING_TYPES, self._enter, stack.append
        while stack:
            node, current = stack.pop()
            try:
                children = children_of[node.__class__](node)
            except (KeyError, AttributeError):
                children = child_nodes(node)
            if not children:
                continue
            if kids is not None:
                kids[node] = children
            for child in children:
                parents[child] = node
                cls = child.__class__
                if cls in binding_types:
                    push((child, enter(child, current, node)))
                else:
                    node_scope[child] = current
                    if children_get(cls) is not _no_children:  # leaves (names, constants) end here
                        push((child, current))

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

    def inside(self, node: ast.AST, ancestor: ast.AST) -> bool:
        """Whether `node` is in `ancestor`'s subtree (what `ast.walk(ancestor)` would reach)."""
        return node is ancestor or ancestor is self.module or any(a is ancestor for a in self.ancestors(node))

    def enclosing_function(self, node: ast.AST) -> Optional[FunctionNode]:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, FUNCTION_TYPES):
                return ancestor  # type: ignore[return-value]
        return None

    def resolve(self, name: str, scope: Scope) -> Optional[Tuple[Scope, List[Binding]]]:
        """The scope that binds `name` as seen from `scope`, with its bindings; None when nothing
        does. Python's LEGB: enclosing class scopes are skipped, `global n` goes to the module and
        `nonlocal n` past the scope that declares it (that scope's own assignments to `n` stay
        recorded in its bindings, where `Scope.nonlocals` tells them apart)."""
        if name in scope.globals_:
            found = self.module_scope.bindings.get(name)
            return (self.module_scope, found) if found else None
        found = scope.bindings.get(name)
        if found and name not in scope.nonlocals:
            return scope, found
        current = scope.parent
        while current is not None:
            if current.node.__class__ is not ast.ClassDef:  # enclosing class scopes are skipped
                found = current.bindings.get(name)
                if found and name not in current.nonlocals:
                    return current, found
            current = current.parent
        return None

    def lookup(self, name: str, scope: Scope) -> List[Binding]:
        """Bindings `name` may refer to from `scope` (see `resolve`)."""
        found = self.resolve(name, scope)
        return found[1] if found is not None else []

    def qualname(self, expr: ast.AST, scope: Optional[Scope] = None, _depth: int = 0) -> Optional[str]:
        """`jax.custom_vjp` for any spelling that resolves to it; builtins as `builtins.x`."""
        if _depth > 8:
            return None
        if scope is None or (_depth == 0 and scope is self._node_scope.get(expr)):
            # An expression in its own scope: the collector and several rules ask the same
            # question of every call, so the answer is kept.
            try:
                return self._qualnames[expr]
            except KeyError:
                pass
            found = self._qualname(expr, self.scope_of(expr), _depth)
            if _depth == 0:
                self._qualnames[expr] = found
            return found
        return self._qualname(expr, scope, _depth)

    def _qualname(self, expr: ast.AST, scope: Scope, _depth: int) -> Optional[str]:
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value, scope, _depth + 1)
            return f"{base}.{expr.attr}" if base else None
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.lookup(expr.id, scope)
        if not bindings:
            # A module used without its import (`functools.partial(jax.custom_vjp, ...)` with no
            # `import functools`): Python raises NameError there, and the expression still says
            # what the author meant, so the rules read it as that module's name.
            return expr.id if expr.id in UNIMPORTED_MODULES else f"builtins.{expr.id}"
        names = set()
        for binding in bindings:
            if binding.kind == "import":
                names.add(binding.qualname)
            elif binding.kind == "assign" and isinstance(binding.value, (ast.Name, ast.Attribute)):
                names.add(self.qualname(binding.value, self.scope_of(binding.node), _depth + 1))
            else:
                return None
        return names.pop() if len(names) == 1 else None


# Modules whose name alone, unbound, is read as the module (the code meant to import it).
UNIMPORTED_MODULES = frozenset({"functools", "jax"})


def named_function(index: SemanticIndex, expr: ast.expr) -> Optional[FunctionNode]:
    """`expr` itself when it is a lambda, else the `def` or lambda the name `expr` is bound to
    once in its scope (None for anything else)."""
    if isinstance(expr, ast.Lambda):
        return expr
    if not isinstance(expr, ast.Name):
        return None
    bindings = index.lookup(expr.id, index.scope_of(expr))
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if binding.kind == "def" and isinstance(binding.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return binding.node
    if binding.kind == "assign" and isinstance(binding.value, ast.Lambda):
        return binding.value
    return None


def constant_value(index: SemanticIndex, expr: ast.expr, scope: Optional[Scope] = None, depth: int = 0) -> object:
    """A literal's value, following module constants and `range(a, b)`; None if unknown."""
    if depth > 5:
        return None
    if scope is None:
        scope = index.scope_of(expr)
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = constant_value(index, expr.operand, scope, depth + 1)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else None
    if isinstance(expr, (ast.Tuple, ast.List)):
        items = [constant_value(index, e, scope, depth + 1) for e in expr.elts]
        if any(i is None for i in items):
            return None
        return tuple(items) if isinstance(expr, ast.Tuple) else list(items)
    if isinstance(expr, ast.Call) and index.qualname(expr.func, scope) == "builtins.range":
        args = [constant_value(index, a, scope, depth + 1) for a in expr.args]
        if args and all(type(a) is int for a in args) and not expr.keywords:
            return tuple(range(*args))  # type: ignore[arg-type]
        return None
    if isinstance(expr, ast.Name):
        bindings = index.lookup(expr.id, scope)
        if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
            return constant_value(index, bindings[0].value, index.scope_of(bindings[0].node), depth + 1)
    return None


def delegate_of(index: SemanticIndex, fn: FunctionNode, depth: int = 3) -> FunctionNode:
    """The function `fn` only hands its parameters to: `def r(a, b): return _r_impl(a, b)` (or
    the same lambda) passing its own positional parameters, in order and nothing else, to a def
    or lambda bound once (`_r_impl`, with as many positional parameters and defaults, no `*args`)
    receives exactly what `fn`'s caller passes it, and returns what `fn` returns. Followed up to
    `depth` times; `fn` itself when it does anything else."""
    for _ in range(depth):
        args = fn.args
        if args.vararg or args.kwarg or args.kwonlyargs:
            return fn
        params = [a.arg for a in args.posonlyargs + args.args]
        if isinstance(fn, ast.Lambda):
            call: Optional[ast.expr] = fn.body
        else:
            stmts = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
            if len(stmts) != 1 or not isinstance(stmts[0], ast.Return):
                return fn
            call = stmts[0].value
        if not isinstance(call, ast.Call) or call.keywords or \
                [a.id if isinstance(a, ast.Name) else None for a in call.args] != params:
            return fn
        target = named_function(index, call.func)
        if target is None or target is fn or isinstance(target, ast.AsyncFunctionDef) or \
                getattr(target, "decorator_list", None):
            return fn
        targs = target.args
        if targs.vararg or targs.kwonlyargs or len(targs.posonlyargs + targs.args) != len(params) or \
                len(targs.defaults) != len(args.defaults):
            return fn
        fn = target
    return fn
