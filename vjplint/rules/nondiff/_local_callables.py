"""Local callables and what they read, for rules about callables passed to a custom derivative
(VJP105): the function a name or lambda passed in a function names, the names it captures from
the enclosing function, and the first numeric use of a name (arithmetic, a comparison, a jnp call)."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.jaxapi import ARRAY_NAMESPACES
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.syntax.walk import walk


def numeric_use(model: FileModel, fn: ast.AST, name: str, depth: int = 0) -> Optional[str]:
    """The first arithmetic, comparison or jnp call in `fn` that reads `name`, or in a function of
    the module `fn` passes `name` to (two calls deep: `lambda z: _inv_efunc(z, omega)` with
    `omega * a3` in `_inv_efunc`)."""
    for node in walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = model.index.parent(node)
        if isinstance(parent, (ast.BinOp, ast.Compare)) or (
                isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)):
            return model.quote(parent, 40)
        if isinstance(parent, ast.Call) and node in parent.args and \
                (model.index.qualname(parent.func) or "").startswith(ARRAY_NAMESPACES):
            return model.quote(parent, 40)
    if depth >= 2:
        return None
    for node in walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = model.index.parent(node)
        call = model.index.parent(parent) if isinstance(parent, ast.keyword) else parent
        if not isinstance(call, ast.Call) or call.func is node or not isinstance(call.func, ast.Name):
            continue
        callee = named_function(model.index, call.func)
        if callee is None or isinstance(callee, ast.Lambda) or callee is fn:
            continue
        params = model.signature(callee).positional
        position = next((i for i, a in enumerate(call.args) if a is node), None)
        inner = parent.arg if isinstance(parent, ast.keyword) else \
            params[position] if position is not None and position < len(params) and \
            not any(isinstance(a, ast.Starred) for a in call.args[:position]) else None
        if inner is None or inner not in params:
            continue
        use = numeric_use(model, callee, inner, depth + 1)
        if use is not None:
            return use if " in `" in use else f"{use}` in `{callee.name}"
    return None

def local_function(model: FileModel, arg: ast.expr, enclosing: FunctionNode, depth: int = 0) -> Optional[FunctionNode]:
    """The lambda or local def `arg` passes: itself, a name bound to one in `enclosing`, or an entry
    of a container built there and bound once (`cfg.fn` with `cfg = Cfg(fn=lambda y: ...)`,
    `fns["act"]` with `fns = {"act": lambda y: ...}`, `pair[0]` of a tuple or list literal)."""
    if depth > 3:
        return None
    if isinstance(arg, ast.Lambda):
        return arg
    scope = model.index.scopes.get(enclosing)
    if isinstance(arg, ast.Name):
        for binding in (scope.bindings.get(arg.id, []) if scope else []):
            if binding.kind == "def":
                return binding.node  # type: ignore[return-value]
            if binding.kind == "assign" and isinstance(binding.value, ast.Lambda):
                return binding.value
        return None
    entry = _container_entry(model, arg, scope)
    return local_function(model, entry, enclosing, depth + 1) if entry is not None else None


def _container_entry(model: FileModel, arg: ast.expr, scope) -> Optional[ast.expr]:
    """What `holder.field` or `holder[key]` reads from the record, dict or sequence literal that
    `holder`, a name bound once in `scope`, is bound to."""
    holder = arg.value if isinstance(arg, (ast.Attribute, ast.Subscript)) else None
    if not isinstance(holder, ast.Name) or scope is None:
        return None
    bindings = scope.bindings.get(holder.id, [])
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
        return None
    built = bindings[0].value
    if isinstance(arg, ast.Attribute):
        if isinstance(built, ast.Call):
            return next((k.value for k in built.keywords if k.arg == arg.attr), None)
        return None
    key = arg.slice
    if not isinstance(key, ast.Constant):  # type: ignore[union-attr]
        return None
    if isinstance(built, ast.Dict):
        return next((v for k, v in zip(built.keys, built.values)
                     if isinstance(k, ast.Constant) and k.value == key.value), None)
    if isinstance(built, (ast.Tuple, ast.List)) and isinstance(key.value, int) and not isinstance(key.value, bool) \
            and not any(isinstance(e, ast.Starred) for e in built.elts) and -len(built.elts) <= key.value < len(built.elts):
        return built.elts[key.value]
    return None

def captured_names(model: FileModel, fn: FunctionNode, enclosing: FunctionNode) -> List[str]:
    outer = model.index.scopes.get(enclosing)
    inner = model.index.scopes.get(fn)
    if outer is None or inner is None:
        return []
    names = []
    for node in walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in names:
            scope = model.index.scope_of(node)
            bindings = model.index.lookup(node.id, scope)
            if bindings and any(b in outer.bindings.get(node.id, []) for b in bindings):
                if all(b.kind not in ("def", "class", "import") for b in bindings):
                    names.append(node.id)
    return names


def traced_instance_method(model: FileModel, arg: ast.expr) -> Optional[Tuple[str, str, ast.Call, str]]:
    """`self.method` handed on inside a method of a class `C` (a layer's `apply(self.act, x)`),
    where `method` reads `self.<field>` and a `C(...)` built in this module holds a traced value in
    that field (`Model(w)` in a function `jax.grad` traces): (method, field, that construction,
    why its field is traced). None otherwise."""
    if not (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)):
        return None
    cls, method = _method_of_self(model, arg.value)
    if cls is None or method is None:
        return None
    target = next((b.node for b in model.index.scopes[cls].bindings.get(arg.attr, []) if b.kind == "def"), None)
    if not isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)) or not target.args.args:
        return None
    me = target.args.args[0].arg
    read = {n.attr for n in walk(target) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == me}
    values = model.facts.values()
    for call in model.facts.calls_of_name(cls.name):  # type: ignore[attr-defined]
        kind = values.of(call)
        if kind.node is not cls:
            continue
        for field, inner in kind.fields:
            leaf = inner.traced_leaf()
            if field in read and leaf is not None:
                return arg.attr, field, call, leaf[1]
    return None


def _method_of_self(model: FileModel, name: ast.Name) -> Tuple[Optional[ast.ClassDef], Optional[FunctionNode]]:
    """(class, method) when `name` is the first parameter of the method of a class it is read in."""
    for binding in model.index.lookup(name.id, model.index.scope_of(name)):
        if binding.kind != "param":
            continue
        for scope in model.index.scope_of(name).chain():
            if scope.is_function and scope.parent is not None and scope.parent.is_class:
                fn = scope.node
                first = (fn.args.posonlyargs + fn.args.args)[:1]  # type: ignore[union-attr]
                if first and first[0] is binding.node and isinstance(scope.parent.node, ast.ClassDef):
                    return scope.parent.node, fn  # type: ignore[return-value]
                return None, None
    return None, None
