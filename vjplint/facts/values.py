"""What expressions and returns provably are: sequences, arrays, tracers; where code runs.

These functions compute; `vjplint.facts.Facts` memoises the per-function ones (call them
through `model.facts`).
"""

from __future__ import annotations

import ast
from typing import AbstractSet, Callable, List, NamedTuple, Optional, Tuple

from vjplint.model.jaxapi import ARRAY_FUNCTIONS, ARRAY_METHODS, ARRAY_NAMESPACES, ARRAY_VALUED_ATTRIBUTES, ONE_ARRAY_NAMESPACES, STATIC_ATTRIBUTES, TRANSFORMS
from vjplint.model.file_model import CustomDerivative, FileModel, TracedFunction
from vjplint.model.semantic import FunctionNode, own_nodes
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query

ARITHMETIC = "an arithmetic result, never a tuple"
TREE_MAPS = frozenset({"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map"})


class Return(NamedTuple):
    """A `return` of a function: the node to report and the returned expression (None for a
    bare `return`)."""

    node: ast.AST
    value: Optional[ast.expr]


def returns_of(fn: FunctionNode) -> List[Return]:
    """Each return of `fn` in source order; empty for generators. A lambda's body counts as
    its return."""
    if isinstance(fn, ast.Lambda):
        return [Return(fn.body, fn.body)]
    found: List[Return] = []
    for node in own_nodes(fn):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return []
        if isinstance(node, ast.Return):
            found.append(Return(node.value if node.value is not None else node, node.value))
    found.sort(key=lambda r: (r.node.lineno, r.node.col_offset))  # type: ignore[attr-defined]
    return found


@query(memo=False)
def return_branches(value: Optional[ast.expr]) -> List[ast.expr]:
    """The expressions a return may evaluate to (both arms of `a if c else b`)."""
    if value is None:
        return []
    if isinstance(value, ast.IfExp):
        return return_branches(value.body) + return_branches(value.orelse)
    return [value]


def _single_local_value(model: FileModel, name: str, fn: FunctionNode) -> Optional[ast.expr]:
    """The value of `name` when `fn` assigns it exactly once as `name = value`."""
    scope = model.index.scopes.get(fn)
    if scope is None or name in scope.globals_ or name in scope.nonlocals:
        return None
    bindings = scope.bindings.get(name, [])
    if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].node, ast.Assign):
        return bindings[0].value
    return None


def sequence_length(model: FileModel, expr: ast.expr, fn: FunctionNode,
                    depth: int = 0) -> Optional[Tuple[int, bool, ast.expr]]:
    """(length, exact, literal) for a tuple/list literal, or a name assigned once to a tuple
    literal; `exact` is False with starred elements (length is then a lower bound)."""
    if depth > 3:
        return None
    if isinstance(expr, (ast.Tuple, ast.List)):
        fixed = sum(not isinstance(e, ast.Starred) for e in expr.elts)
        extra = 0
        exact = True
        for element in expr.elts:
            if isinstance(element, ast.Starred):
                inner = sequence_length(model, element.value, fn, depth + 1) \
                    if isinstance(element.value, (ast.Name, ast.Tuple, ast.List)) else None
                if inner is None or not inner[1]:
                    exact = False
                    extra += inner[0] if inner else 0
                else:
                    extra += inner[0]
        return fixed + extra, exact, expr
    if isinstance(expr, ast.Name):
        value = _single_local_value(model, expr.id, fn)
        if isinstance(value, ast.Tuple):
            return sequence_length(model, value, fn, depth + 1)
    return None


def not_a_sequence(model: FileModel, expr: Optional[ast.expr], fn: FunctionNode,
                   arrays: AbstractSet[str] = frozenset(), depth: int = 0) -> Optional[str]:
    """Why `expr` can never evaluate to a tuple or list ('None', 'an array'); None when it may."""
    if depth > 4:
        return None
    if expr is None or isinstance(expr, ast.Constant) and expr.value is None:
        return "None"
    if isinstance(expr, ast.Constant):
        return "a constant"
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return "a dict"
    if isinstance(expr, (ast.Set, ast.SetComp)):
        return "a set"
    if isinstance(expr, ast.GeneratorExp):
        return "a generator"
    if isinstance(expr, (ast.Compare, ast.JoinedStr)) or isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return "a bool" if not isinstance(expr, ast.JoinedStr) else "a string"
    if isinstance(expr, ast.UnaryOp):  # -t, +t, ~t raise for a tuple or list
        inner = not_a_sequence(model, expr.operand, fn, arrays, depth + 1)
        return "an array" if inner == "an array" else ARITHMETIC
    if isinstance(expr, ast.IfExp):
        a = not_a_sequence(model, expr.body, fn, arrays, depth + 1)
        b = not_a_sequence(model, expr.orelse, fn, arrays, depth + 1)
        return a if a is not None and a == b else ("a value that is not a tuple" if a and b else None)
    if isinstance(expr, ast.BinOp):
        sides = [not_a_sequence(model, s, fn, arrays, depth + 1) for s in (expr.left, expr.right)]
        if "an array" in sides:
            return "an array"  # arithmetic with an array gives an array (or raises)
        if not isinstance(expr.op, (ast.Add, ast.Mult)):
            return ARITHMETIC  # tuples and lists support no other operator
        numbers = (int, float, complex) if isinstance(expr.op, ast.Add) else (float, complex)
        if any(isinstance(side, ast.Constant) and isinstance(side.value, numbers) and not isinstance(side.value, bool)
               for side in (expr.left, expr.right)):
            return ARITHMETIC  # `t + 1` and `2.0 * t` raise for a tuple; `2 * t` would repeat it
        return None
    if isinstance(expr, ast.Call):
        func = expr.func
        q = model.index.qualname(func) or ""
        if q in ("jax.numpy.where", "jax.lax.select") and len(expr.args) == 3 and not expr.keywords:
            return "an array"  # `jnp.where(c, a, b)`; `jnp.where(c)` alone is a tuple of index arrays
        if q in TREE_MAPS and len(expr.args) >= 2 and not expr.keywords and isinstance(expr.args[0], ast.Lambda) \
                and expr.args[0].args.args and not_a_sequence(model, expr.args[1], fn, arrays, depth + 1) == "an array":
            # `tree_map(lambda u: 2.0 * u, g)` over one array is the lambda's value for it
            body = not_a_sequence(model, expr.args[0].body, fn, {*arrays, expr.args[0].args.args[0].arg}, depth + 1)
            return "an array" if body in ("an array", ARITHMETIC) else None
        if q in ("builtins.dict", "collections.OrderedDict"):
            return "a dict"  # `dict(primal=y, tangent=t)`: a mapping, never a tuple or list
        if q == "builtins.sum" and len(expr.args) == 1 and not expr.keywords:
            return "an array"  # `sum(term(i) for i ...)` starts from 0: `0 + (a, b)` raises, so never a tuple
        if q.startswith(ONE_ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in ARRAY_FUNCTIONS:
            if not any(k.arg == "return_sign" for k in expr.keywords):  # logsumexp(..., return_sign=True)
                return "an array"
            return None
        method = _instance_method(model, func, fn) if isinstance(func, ast.Attribute) and not q else None
        if method is not None and depth < 3:  # `self.tangent(x, t)`, `ACT.tangent(...)` of a class of the module
            found = returns_of(method)
            if found and all(not_a_sequence(model, r.value, method, frozenset(), depth + 1) == "an array" for r in found):
                return "an array"
        if isinstance(func, ast.Attribute) and func.attr in ARRAY_METHODS and not q.startswith(("jax.", "numpy.")):
            base = not_a_sequence(model, func.value, fn, arrays, depth + 1)
            return "an array" if base == "an array" or func.attr in ("astype", "reshape") else None
        return None
    if isinstance(expr, ast.Attribute) and expr.attr in ARRAY_VALUED_ATTRIBUTES:
        return "an array" if not_a_sequence(model, expr.value, fn, arrays, depth + 1) == "an array" else None
    if isinstance(expr, ast.Name):
        if expr.id in arrays:
            return "an array"
        if _unpacked_from_array_tuple(model, expr.id, fn, arrays, depth):
            return "an array"
        value = _single_local_value(model, expr.id, fn)
        if value is not None:
            inner = not_a_sequence(model, value, fn, arrays, depth + 1)
            return inner if inner in ("an array", "a dict", "a set", "a generator") else None
        values = _every_local_value(model, expr.id, fn)
        if values and expr.id not in arrays and not_a_sequence(model, values[0], fn, arrays, depth + 1) == "an array" \
                and all(not_a_sequence(model, v, fn, arrays | {expr.id}, depth + 1) == "an array" for v in values[1:]):
            return "an array"  # `out = jnp.dot(x, w)`, then `out = out + b`: an array at every binding
    return None


def _instance_method(model: FileModel, func: ast.Attribute, fn: FunctionNode) -> Optional[FunctionNode]:
    """The method `func` calls, where its object is `self` in a method of a class of the module or a
    name bound once to an instance of one (`ACT = Act(0.1)`), and the class defines it itself."""
    base = func.value
    if not isinstance(base, ast.Name):
        return None
    cls: Optional[ast.AST] = None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args] if not isinstance(fn, ast.Lambda) else []
    if params and base.id == params[0] == "self":
        cls = model.index.parent(fn)
    else:
        bindings = model.index.lookup(base.id, model.index.scope_of(base))
        made = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
        if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
            found = model.index.lookup(made.func.id, model.index.scope_of(made))
            cls = found[0].node if len(found) == 1 and found[0].kind == "class" else None
    if not isinstance(cls, ast.ClassDef):
        return None
    defs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == func.attr]
    return defs[0] if len(defs) == 1 else None


_ARRAY_TUPLE_NAMESPACES = ("jax.numpy.", "jax.scipy.linalg.")


_LOOP_CARRY = {"jax.lax.while_loop": 2, "jax.lax.fori_loop": 3}


def _unpacked_from_array_tuple(model: FileModel, name: str, fn: FunctionNode,
                               arrays: AbstractSet[str] = frozenset(), depth: int = 0) -> bool:
    """`name` is bound once, by unpacking what a `jax.numpy`/`jax.scipy.linalg` function returns
    (`q, r = jnp.linalg.qr(m)`, `u, s, vt = jnp.linalg.svd(a)`): their tuples and lists hold arrays;
    or the final carry of `lax.while_loop`/`fori_loop` started from a tuple literal whose entry
    in its place is an array (the loop keeps the carry's structure)."""
    scope = model.index.scopes.get(fn)
    if scope is None or name in scope.globals_ or name in scope.nonlocals:
        return False
    bindings = scope.bindings.get(name, [])
    if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].node, ast.Assign):
        return False
    stmt = bindings[0].node
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], (ast.Tuple, ast.List)) or \
            not isinstance(stmt.value, ast.Call):
        return False
    elts = stmt.targets[0].elts
    if not any(isinstance(e, ast.Name) and e.id == name for e in elts):
        return False  # starred (a list) or nested
    q = model.index.qualname(stmt.value.func) or ""
    if q in _LOOP_CARRY:
        args = stmt.value.args
        init = args[_LOOP_CARRY[q]] if len(args) > _LOOP_CARRY[q] and not stmt.value.keywords else None
        i = next(k for k, e in enumerate(elts) if isinstance(e, ast.Name) and e.id == name)
        return isinstance(init, ast.Tuple) and len(init.elts) == len(elts) and \
            not any(isinstance(e, ast.Starred) for e in init.elts + elts) and depth < 4 and \
            not_a_sequence(model, init.elts[i], fn, arrays, depth + 1) == "an array"
    return q.startswith(_ARRAY_TUPLE_NAMESPACES)


def _every_local_value(model: FileModel, name: str, fn: FunctionNode) -> Optional[List[ast.expr]]:
    """The values of `name`, in source order, when every binding of it in `fn` is a plain `name = value`."""
    scope = model.index.scopes.get(fn)
    if scope is None or name in scope.globals_ or name in scope.nonlocals:
        return None
    bindings = scope.bindings.get(name, [])
    if len(bindings) < 2 or any(b.kind != "assign" or not isinstance(b.node, ast.Assign) or b.value is None
                                or len(b.node.targets) != 1 or not isinstance(b.node.targets[0], ast.Name)
                                for b in bindings):
        return None
    ordered = sorted(bindings, key=lambda b: (b.node.lineno, b.node.col_offset))
    return [b.value for b in ordered]  # type: ignore[misc]


def primal_returns_array(model: FileModel, d: CustomDerivative) -> bool:
    """True when every return of the primal is provably one array (so the cotangent is one too)."""
    if d.primal is None:
        return False
    returns = model.facts.returns_of(d.primal)
    return bool(returns) and all(not_a_sequence(model, value, d.primal) == "an array" for _, value in returns)


def is_transform_argument(model: FileModel, node: ast.AST) -> bool:
    """True when `node` is the function argument of jax.grad/jit/vmap/... (so it gets called)."""
    parent = model.index.parent(node)
    if not isinstance(parent, ast.Call):
        return False
    q = model.index.qualname(parent.func)
    return q in TRANSFORMS and TRANSFORMS[q] < len(parent.args) and parent.args[TRANSFORMS[q]] is node


def describe_traced(traced: TracedFunction) -> str:
    name = getattr(traced.node, "name", "<lambda>")
    return f"`{name}`, which is traced by `{traced.how}`"


def traced_reason(model: FileModel, expr: ast.expr, fn: FunctionNode, traced: TracedFunction,
                  depth: int = 0) -> Optional[str]:
    """Why `expr`, evaluated inside traced `fn`, is a tracer; None when it is not (or unknown)."""
    if depth > 6:
        return None
    if isinstance(expr, ast.Constant):
        return None
    if isinstance(expr, ast.Name):
        scope = model.index.scopes.get(fn)
        bindings = scope.bindings.get(expr.id, []) if scope is not None else []
        if not bindings:
            return None
        if any(b.kind == "param" for b in bindings):
            if expr.id in traced.static_params:
                return None
            return f"`{expr.id}` is a parameter of {describe_traced(traced)}"
        for binding in bindings:
            if binding.kind == "assign" and binding.value is not None:
                inner = traced_reason(model, binding.value, fn, traced, depth + 1)
                if inner is not None:
                    return f"`{expr.id}` is computed from a traced value ({inner})"
        return None
    if isinstance(expr, ast.Attribute):
        if expr.attr in STATIC_ATTRIBUTES:
            return None
        return traced_reason(model, expr.value, fn, traced, depth + 1)
    if isinstance(expr, ast.Subscript):
        if isinstance(expr.value, ast.Attribute) and expr.value.attr in STATIC_ATTRIBUTES:
            return None
        return traced_reason(model, expr.value, fn, traced, depth + 1)
    if isinstance(expr, ast.Call):
        q = model.index.qualname(expr.func) or ""
        if q in ("builtins.len", "builtins.int", "builtins.float", "builtins.bool", "builtins.str",
                 "builtins.isinstance", "builtins.type"):
            return None
        if q.startswith(ARRAY_NAMESPACES):
            module = q.rsplit(".", 1)[0]
            return f"`{model.quote(expr, 50)}` is computed with `{module}` inside {describe_traced(traced)}"
        if isinstance(expr.func, ast.Attribute):  # a method of a traced value: `x.max()`
            inner = traced_reason(model, expr.func.value, fn, traced, depth + 1)
            if inner is not None:
                return inner
        for arg in [*expr.args, *(k.value for k in expr.keywords)]:
            inner = traced_reason(model, arg, fn, traced, depth + 1)
            if inner is not None:
                return inner
        return None
    if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List)):
        for child in ast.iter_child_nodes(expr):
            if isinstance(child, ast.expr):
                inner = traced_reason(model, child, fn, traced, depth + 1)
                if inner is not None:
                    return inner
    return None


def derivative_named(model: FileModel, expr: ast.expr) -> Optional[CustomDerivative]:
    """The custom derivative of this module that the name `expr` refers to, if any."""
    if not isinstance(expr, ast.Name):
        return None
    for binding in model.index.lookup(expr.id, model.index.scope_of(expr)):
        found = model.derivative_for_node(binding.node)
        if found is not None:
            return found
    return None


def expects_failure(model: FileModel, node: ast.AST) -> bool:
    """True inside `with pytest.raises(...)` / `with self.assertRaises(...)`, or inside the
    callable given to `self.assertRaises(Error, fn)`: a test that wants the error JAX raises."""
    for ancestor in model.index.ancestors(node):
        if isinstance(ancestor, ast.Call) and _is_raises_check(model, ancestor.func):
            return True
        if isinstance(ancestor, (ast.With, ast.AsyncWith)):
            for item in ancestor.items:
                call = item.context_expr
                if not isinstance(call, ast.Call):
                    continue
                if _is_raises_check(model, call.func):
                    return True
    return False


def _is_raises_check(model: FileModel, func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute) and func.attr.startswith("assertRaises"):
        return True
    return model.index.qualname(func) == "pytest.raises"




def numeric_use(model: FileModel, root: ast.AST, match: Callable[[ast.AST], bool]) -> Optional[ast.AST]:
    """The first arithmetic, comparison or jnp/lax call argument in `root` that reads a node
    `match` accepts (or an item of it: `self.params["w"] * x`): the value is used as array data."""
    for node in walk(root):
        if not match(node):
            continue
        read, parent = node, model.index.parent(node)
        while isinstance(parent, ast.Subscript) and parent.value is read:
            read, parent = parent, model.index.parent(parent)
        if isinstance(parent, (ast.BinOp, ast.Compare)) or (
                isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)):
            return parent
        if isinstance(parent, ast.Call) and read in parent.args and \
                (model.index.qualname(parent.func) or "").startswith(ARRAY_NAMESPACES):
            return parent
    return None


def class_methods(model: FileModel, cls: ast.ClassDef, depth: int = 0) -> List[ast.FunctionDef]:
    """The methods of `cls`, then those it inherits from base classes defined in this module."""
    out = [m for m in cls.body if isinstance(m, ast.FunctionDef)]
    if depth > 3:
        return out
    for base in cls.bases:
        if isinstance(base, ast.Name):
            found = [b.node for b in model.index.lookup(base.id, model.index.scope_of(cls)) if b.kind == "class"]
            if len(found) == 1:
                own = {m.name for m in out}
                out += [m for m in class_methods(model, found[0], depth + 1) if m.name not in own]  # type: ignore
    return out


@query
def is_callable_class(model: FileModel, cls: Optional[ast.AST]) -> bool:
    """A class of this module whose objects can be called: it defines or inherits `__call__`."""
    return isinstance(cls, ast.ClassDef) and any(m.name == "__call__" for m in class_methods(model, cls))


def field_use(model: FileModel, cls: ast.ClassDef, name: str) -> Optional[ast.AST]:
    """Where a method of `cls` (not `__init__`) uses its field `self.<name>` as array data."""
    for method in class_methods(model, cls):
        if method.name == "__init__":
            continue
        positional = [*method.args.posonlyargs, *method.args.args]
        if not positional or method.decorator_list:  # a staticmethod/classmethod/property has no `self` field
            continue
        me = positional[0].arg
        found = numeric_use(model, method, lambda n: isinstance(n, ast.Attribute) and n.attr == name and isinstance(
            n.value, ast.Name) and n.value.id == me and isinstance(n.ctx, ast.Load))
        if found is not None:
            return found
    return None
