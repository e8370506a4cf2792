"""Arguments that are or may be functions: what a call passes in a slot (a lambda, a def,
`functools.partial`, a JAX function), callable pytrees (`jax.tree_util.Partial`, a class
instance), and where a primal calls one of its parameters. Read by VJP108."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from vjplint.rules.nondiff._concrete import is_name
from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

FUNCTION_NAMESPACES = ("jax.numpy.", "jax.nn.", "jax.lax.", "jax.scipy.special.")
CONSTANTS = frozenset({"pi", "e", "inf", "nan", "euler_gamma", "newaxis", "PINF", "NINF", "NAN", "NZERO", "PZERO"})
# Transformations whose first argument is the function they call: `jax.vjp(op, a, b)` calls `op`.
CALLS_FIRST = frozenset({"jax.vjp", "jax.jvp", "jax.linearize", "jax.grad", "jax.value_and_grad", "jax.jacrev",
                         "jax.jacfwd", "jax.hessian", "jax.checkpoint", "jax.remat", "jax.vmap", "jax.jit"})
PYTREE_CALLABLES = frozenset({"jax.tree_util.Partial"})
# Names of callable pytrees (an equinox or flax module): a called parameter so named may be data.
MODULE_WORDS = ("model", "module", "net", "network", "layer", "mlp", "policy", "params", "cell", "block")


def names_pytree_callable(model: FileModel, arg: ast.expr) -> bool:
    """An object that may be a callable pytree: a `jax.tree_util.Partial(...)` or an instance
    of a class (`Wave(amplitude)`, `eqx.nn.MLP(...)`: a class of this module, or a capitalised
    name), directly or through a name bound once."""
    if isinstance(arg, ast.Name):
        bindings = model.index.lookup(arg.id, model.index.scope_of(arg))
        if len(bindings) != 1 or not isinstance(bindings[0].value, ast.expr):
            return False
        arg = bindings[0].value
    if not isinstance(arg, ast.Call):
        return False
    if is_pytree_callable(model, arg):
        return True
    func = arg.func
    tail = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if tail[:1].isupper():
        return True
    if isinstance(func, ast.Name):
        found = model.index.lookup(func.id, model.index.scope_of(func))
        return len(found) == 1 and isinstance(found[0].node, ast.ClassDef)
    return False

def saved_as_residual(model: FileModel, d: CustomDerivative, position: int) -> bool:
    """fwd returns the argument among its residuals: residuals are JAX data, so the author
    passes a callable pytree there (a Python function would fail in fwd already)."""
    fwd = d.rule("fwd")
    if fwd is None or fwd.node is None:
        return False
    params = fwd.effective_positional()
    if params is None or position >= len(params):
        return False
    for _, value in model.facts.returns_of(fwd.node):
        if isinstance(value, ast.Tuple) and len(value.elts) == 2 and any(
                is_name(n, params[position]) for n in walk(value.elts[1])):
            return True
    return False

def called(model: FileModel, fn: FunctionNode, param: str) -> Optional[ast.Call]:
    """The first call in `fn` (nested functions and lambdas included) of the parameter `param`
    itself, or of a transformation given it to call (`jax.vjp(param, ...)`)."""
    index = model.index
    for node, name in model.facts.of_function(_calls_by_callee_name, fn).get(param, ()):
        found = index.resolve(param, index.scope_of(name))
        if found is not None and found[0].node is fn:
            return node
    return None


def element_called(model: FileModel, fn: FunctionNode, param: str) -> Optional[ast.Call]:
    """The first call in `fn` of a name `fn` binds only from an element of its parameter `param`
    (`f = f[0]`, `(f,) = fs`, `g = fs["g"]`: the argument is a container holding the callable, a
    tuple/dict/NamedTuple whose leaves JAX flattens as data); None when `param` is bound otherwise too."""
    scope = model.index.scopes.get(fn)
    if scope is None or isinstance(fn, ast.Lambda):
        return None
    elements: List[str] = []
    for node in model.facts.walk(fn):  # kept per function: asked once per parameter
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        root = node.value
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        if not is_name(root, param) or node.value is root and not isinstance(node.targets[0], (ast.Tuple, ast.List)):
            continue
        target = node.targets[0]
        elements += [t.id for t in ([target] if isinstance(target, ast.Name) else getattr(target, "elts", []))
                     if isinstance(t, ast.Name)]
    others = [b for b in scope.bindings.get(param, []) if b.kind not in ("param",)]
    if not elements or any(not isinstance(b.node, ast.Assign) or b.node.targets[0].__class__ not in (ast.Name, ast.Tuple, ast.List)
                           for b in others):
        return None
    calls = model.facts.of_function(_calls_by_callee_name, fn)
    for name in elements:
        if any(b.kind != "assign" and b.kind != "param" for b in scope.bindings.get(name, [])):
            continue
        for node, _ in calls.get(name, ()):
            return node
    return None


def container_leaves(model: FileModel, arg: ast.expr) -> List[ast.expr]:
    """What a container argument holds, as a call passes it (`(f,)`, `[f, g]`, `{"f": f}`, a
    NamedTuple class of this module built in place, `Box(f)`): the values JAX flattens into
    leaves; `[arg]` for anything else (a registered class may keep a field static)."""
    if isinstance(arg, (ast.Tuple, ast.List)):
        return [e for e in arg.elts if not isinstance(e, ast.Starred)]
    if isinstance(arg, ast.Dict):
        return [v for v in arg.values if v is not None]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
        found = model.index.lookup(arg.func.id, model.index.scope_of(arg.func))
        if len(found) == 1 and isinstance(found[0].node, ast.ClassDef) and any(
                (b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")) == "NamedTuple"
                for b in found[0].node.bases):  # a NamedTuple's fields are all leaves (no static field)
            return [*arg.args, *(k.value for k in arg.keywords)]
    return [arg]


def _calls_by_callee_name(model: FileModel, fn: FunctionNode) -> Dict[str, List[Tuple[ast.Call, ast.Name]]]:
    """{name: (call, the Name it calls)} in source order: `name(...)`, and a transformation
    given `name` to call (`jax.vjp(name, ...)`); kept per function (`called` asks per parameter)."""
    found: Dict[str, List[Tuple[ast.Call, ast.Name]]] = {}
    for node in model.facts.calls_by_position(fn):
        func = node.func
        if isinstance(func, ast.Name):
            found.setdefault(func.id, []).append((node, func))
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Name) and not (isinstance(func, ast.Name) and func.id == first.id) \
                and model.index.qualname(func) in CALLS_FIRST:
            found.setdefault(first.id, []).append((node, first))
    return found


def is_pytree_callable(model: FileModel, arg: ast.expr) -> bool:
    return isinstance(arg, ast.Call) and model.index.qualname(arg.func) in PYTREE_CALLABLES

def is_function(model: FileModel, arg: ast.expr) -> bool:
    if isinstance(arg, ast.Lambda):
        return True
    if isinstance(arg, ast.Call):
        return model.index.qualname(arg.func) == "functools.partial"
    if isinstance(arg, ast.Attribute):  # `jnp.sin`, `jax.nn.relu`: JAX's functions, not its constants
        q = model.index.qualname(arg) or ""
        return q.startswith(FUNCTION_NAMESPACES) and q.rsplit(".", 1)[-1] not in CONSTANTS
    if isinstance(arg, ast.Name):
        bindings = model.index.lookup(arg.id, model.index.scope_of(arg))
        return bool(bindings) and all(b.kind == "def" and not getattr(b.node, "decorator_list", None)
                                      for b in bindings)
    return False


def passed_callables(model: FileModel, d: CustomDerivative, position: int, name: str) -> Tuple[bool, bool]:
    """(a call passes a callable pytree in the slot, a call passes a plain Python function there),
    following what reaches it: a name bound once, a function of the module that returns one
    (`make_operator(a)` returning `jax.tree_util.Partial(...)`), a parameter of the calling
    function through that function's own callers (three calls deep). Read by VJP110: a
    `jax.tree_util.Partial` is a pytree, which a jit or checkpoint beneath the creator traces as data."""
    found = [False, False]
    for site in d.call_sites:
        arg = model.facts.argument_at(site.call, position, name)
        if arg is not None:
            _reached(model, arg, found, 0)
    return found[0], found[1]


def _reached(model: FileModel, arg: ast.expr, found: List[bool], depth: int) -> None:
    if depth > 3:
        return
    if is_pytree_callable(model, arg):
        found[0] = True
        return
    if is_function(model, arg):
        found[1] = True
        return
    index = model.index
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):  # a factory of the module
        callee = [b.node for b in index.lookup(arg.func.id, index.scope_of(arg))]
        if len(callee) == 1 and isinstance(callee[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            for _, value in model.facts.returns_of(callee[0]):
                if isinstance(value, ast.expr):
                    _reached(model, value, found, depth + 1)
        return
    if not isinstance(arg, ast.Name):
        return
    bindings = index.lookup(arg.id, index.scope_of(arg))
    if len(bindings) != 1:
        return
    b = bindings[0]
    if b.kind == "assign" and isinstance(b.value, ast.expr):
        _reached(model, b.value, found, depth + 1)
    elif b.kind == "param":
        fn = index.scope_of(arg).node
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        params = model.signature(fn).positional
        if arg.id not in params:
            return
        for call in model.facts.calls_of_name(fn.name):
            if [c.node for c in index.lookup(fn.name, index.scope_of(call))] != [fn]:
                continue
            passed = model.facts.argument_at(call, params.index(arg.id), arg.id)
            if passed is not None:
                _reached(model, passed, found, depth + 1)
