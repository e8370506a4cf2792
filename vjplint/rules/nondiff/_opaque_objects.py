"""Arguments that JAX's nondiff check sees as one Python object, not a pytree, whatever they hold: a
lambda, a `functools.partial`, a call of a module function returning a nested def or lambda, or an
object of a class of this module that is not a pytree (no decorator, plain bases). Read by VJP104."""

from __future__ import annotations

import ast
from typing import Optional


def closure_maker(model, arg: ast.expr) -> bool:
    """A lambda, `functools.partial(...)` or a call of a module function returning a nested def or
    lambda: one Python object (not a pytree), so JAX's nondiff tracer check does not see inside."""
    if isinstance(arg, ast.Lambda):
        return True
    if not isinstance(arg, ast.Call):
        return False
    if model.index.qualname(arg.func) == "functools.partial":
        return True
    if not isinstance(arg.func, ast.Name):
        return False
    defs = [b.node for b in model.index.lookup(arg.func.id, model.index.scope_of(arg)) if b.kind == "def"]
    returns = [r.value for fn in defs for r in model.facts.returns_of(fn)]
    nested = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)
    return bool(returns) and all(isinstance(v, ast.Lambda) or (isinstance(v, ast.Name) and any(
        isinstance(b.node, nested) for b in model.index.lookup(v.id, model.index.scope_of(v)))) for v in returns)


def plain_object(model, arg: ast.expr, depth: int = 0) -> Optional[str]:
    """The name of the class when `arg` (or the name it is bound to once) builds an object of a
    class of this module that is not a pytree (no decorator, no base class): to JAX's nondiff
    check it is one leaf that is not a tracer, whatever its attributes hold."""
    index = model.index
    if isinstance(arg, ast.Name):
        bindings = index.lookup(arg.id, index.scope_of(arg))
        if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
            return None
        arg = bindings[0].value
    if not (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name)):
        return None
    found = index.lookup(arg.func.id, index.scope_of(arg))
    if len(found) == 1 and found[0].kind == "def" and depth == 0:  # `make_layer(w)` returning `Layer(w)`
        built = {plain_object(model, r.value, 1) if r.value is not None else None
                 for r in model.facts.returns_of(found[0].node)}
        return built.pop() if len(built) == 1 else None
    classes = [b.node for b in found if b.kind == "class"]
    if len(classes) != 1:
        return None
    return classes[0].name if plain_class(model, classes[0], 0) else None


def plain_class(model, cls: ast.ClassDef, depth: int) -> bool:
    """No decorator (a pytree registration, a dataclass transform) and only plain base classes of
    this module (an equinox Module or a NamedTuple is a pytree)."""
    if cls.decorator_list or cls.keywords or depth > 3:
        return False
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id == "object":
            continue
        found = [b.node for b in model.index.lookup(base.id, model.index.scope_of(cls)) if b.kind == "class"] \
            if isinstance(base, ast.Name) else []
        if len(found) != 1 or not plain_class(model, found[0], depth + 1):
            return False
    return True


def registered_by_call(model, name: str) -> bool:
    """A class of that name given to a function of `jax.tree_util` by a statement
    (`jax.tree_util.register_static(Cls)`, `register_pytree_node(Cls, ...)`, `register_dataclass(Cls, ...)`): a
    pytree or a static leaf, not a plain object, though it has no decorator."""
    return any((model.index.qualname(call.func) or "").startswith(("jax.tree_util.", "jax.tree."))
               and any(isinstance(a, ast.Name) and a.id == name for a in call.args)
               for call in model.index.of_type(ast.Call))


def plain_object_passed(model, d, moved) -> str:
    """Why the values at `moved` cannot leave nondiff_argnums when a call of this module passes one
    of them an object of a class of the module that is no pytree: as a regular argument it is data
    JAX cannot take (TypeError, eagerly too: VJP109), so the residual-plus-None fix is refused."""
    for site in d.call_sites:
        for position in moved:
            k = position - site.positional_offset
            if 0 <= k < len(site.call.args) and not any(isinstance(a, ast.Starred) for a in site.call.args[:k + 1]):
                cls = plain_object(model, site.call.args[k])
                if cls is not None:
                    return (f"line {site.call.lineno} passes it an object of class `{cls}`, which is no pytree: "
                            f"as a regular argument JAX would reject it")
    return ""
