"""Names of a custom_vjp's rules that JAX traces (cotangents, residuals computed from the inputs,
differentiable inputs, and what is computed from them), read by VJP332 (NumPy on them) and
VJP344 (Python values made of them). Private to the tracing family."""

from __future__ import annotations

import ast
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, child_nodes, named_function

# NumPy functions that read only a value's metadata, or never convert their argument: safe on a
# tracer (np.shape(t) reads t.shape).
METADATA = frozenset({
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "isscalar", "issubdtype",
    "broadcast_shapes", "promote_types", "can_cast", "finfo", "iinfo", "dtype", "zeros", "ones",
    "empty", "full", "arange", "linspace", "eye", "identity",
})
# Reading these attributes of a tracer gives static Python values.
STATIC_ATTRS = frozenset({"shape", "dtype", "ndim", "size", "aval", "weak_type", "sharding"})
STATIC_CALLS = frozenset({"builtins.len", "builtins.type", "builtins.isinstance", "builtins.id",
                          "builtins.callable", "builtins.hasattr",
                          # a value's metadata or pytree structure, never its values
                          "jax.numpy.ndim", "jax.numpy.shape", "jax.numpy.size", "jax.numpy.result_type",
                          "jax.numpy.iscomplexobj", "jax.numpy.isrealobj", "jax.numpy.issubdtype",
                          "jax.tree_util.tree_structure", "jax.tree.structure", "jax.tree_util.tree_leaves",
                          "jax.tree.leaves", "jax.tree_util.tree_flatten", "jax.tree.flatten",
                          "jax.dtypes.result_type", "jax.dtypes.issubdtype", "jax.typeof"})
# Calls that give the leaves of a pytree: the values themselves (the call reads no value; a loop
# over its result does).
LEAF_CALLS = frozenset({"jax.tree_util.tree_leaves", "jax.tree.leaves"})
COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp)
# Comparisons that never look at an array's values.
IDENTITY = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def comprehension_targets(model: FileModel, comp: ast.expr, reads: Callable[[ast.expr], bool]) -> Set[str]:
    """The names a comprehension binds to values of a traced iterable: `c` in `for c in g`,
    `for c in jax.tree_util.tree_leaves(g)`, and in `for c, x in zip(g, xs)` only `c`; `reads`
    says whether an expression's value is traced."""
    names: Set[str] = set()
    for gen in getattr(comp, "generators", []):
        it, target = gen.iter, gen.target
        q = model.index.qualname(it.func) or "" if isinstance(it, ast.Call) else ""
        if q in LEAF_CALLS:
            if it.args and reads(it.args[0]):
                names.update(target_names(target))
        elif q == "builtins.zip" and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(it.args):
            for t, a in zip(target.elts, it.args):
                if reads(a):
                    names.update(target_names(t))
        elif q == "" and reads(it):
            names.update(target_names(target))
    return names


def residual_seeds(model: FileModel, bwd: FunctionNode, res: str, residual: Optional[ast.expr],
                   fwd_traced: Dict[str, str], quote) -> Dict[str, str]:
    """The bwd names that hold residuals fwd computed from traced values."""
    if residual is None:
        return {}
    why = "a residual that fwd computed from its inputs"
    if isinstance(residual, ast.Dict):
        return _dict_residual_seeds(model, bwd, res, residual, fwd_traced, quote, why)
    if not isinstance(residual, ast.Tuple):
        return {res: f"{why} (`{res}`)"} if traced(model, residual, fwd_traced) else {}
    seeds: Dict[str, str] = {}
    for node in model.facts.own_nodes(bwd):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name) \
                and node.value.id == res and isinstance(node.targets[0], (ast.Tuple, ast.List)) \
                and len(node.targets[0].elts) == len(residual.elts):
            for target, saved in zip(node.targets[0].elts, residual.elts):
                if isinstance(target, ast.Name) and traced(model, saved, fwd_traced):
                    seeds[target.id] = f"{why} (`{target.id}`, saved as `{quote(saved, 30)}`)"
    return seeds


def _dict_residual_seeds(model: FileModel, bwd: FunctionNode, res: str, residual: ast.Dict,
                         fwd_traced: Dict[str, str], quote, why: str) -> Dict[str, str]:
    """`residual_seeds` for a dict literal with string keys (`{'x_shape': x.shape, 'idx': idx}`):
    a name bwd binds to `res['key']` holds that key's value, traced or not (a shape saved beside
    arrays stays a Python tuple); `res` itself is traced wherever it is read otherwise."""
    if not residual.keys or not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in residual.keys):
        return {res: f"{why} (`{res}`)"} if traced(model, residual, fwd_traced) else {}
    saved = {k.value: v for k, v in zip(residual.keys, residual.values)}  # type: ignore[union-attr]

    def key_of(e: ast.AST) -> Optional[str]:
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id == res and \
                isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str) and e.slice.value in saved:
            return e.slice.value
        return None
    seeds: Dict[str, str] = {}
    read: Set[int] = set()  # the `res['key']` reads bound to a name
    for node in model.facts.own_nodes(bwd):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            for target, value in _pairs(node.targets[0], node.value):
                key = key_of(value)
                if key is None or not isinstance(target, ast.Name):
                    continue
                read.add(id(value))
                if traced(model, saved[key], fwd_traced):
                    seeds[target.id] = f"{why} (`{target.id}`, saved as `{quote(saved[key], 30)}`)"
    for node in model.facts.own_nodes(bwd):
        if isinstance(node, ast.Name) and node.id == res and isinstance(node.ctx, ast.Load):
            parent = model.index.parent(node)
            key = key_of(parent)
            if key is not None and (id(parent) in read or not traced(model, saved[key], fwd_traced)):
                continue
            seeds[res] = f"{why} (`{res}`)"
            break
    return seeds


def residual_of(model: FileModel, fwd: FunctionNode) -> Optional[ast.expr]:
    """The residual fwd returns, when every return gives the same literal pair's second half."""
    found: List[ast.expr] = []
    for ret in model.facts.returns_of(fwd):
        if not isinstance(ret.value, ast.Tuple) or len(ret.value.elts) != 2:
            return None
        found.append(ret.value.elts[1])
    return found[0] if len(found) == 1 else None


class Taint:
    """Names of a rule bound, straight-line, to values computed from the seeds (kept with the
    seed's description), following single-name and tuple assignments."""

    def __init__(self, model: FileModel, fn: FunctionNode, seeds: Dict[str, str], depth: int = 0) -> None:
        self.names = dict(seeds)
        self.rebound: Set[str] = set()
        assigns: List[Tuple[ast.expr, ast.expr]] = []
        rebound: Set[str] = set()
        for node in model.facts.own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                assigns.append((node.targets[0], node.value))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) \
                    and node.value is not None:  # `dy += ...`: traced when its first value or the addend is
                assigns.append((node.target, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.For)) and isinstance(node.target, ast.Name):
                rebound.add(node.target.id)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr, ast.Global,
                                   ast.Nonlocal, ast.Delete, ast.ExceptHandler, ast.Import, ast.ImportFrom)):
                self.rebound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                                    and not isinstance(n.ctx, ast.Load))  # bound where no taint is followed
                self.rebound.update(getattr(node, "names", None) or ())
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name):
                self.rebound.add(node.func.value.id)  # `acc.append(x)`: may now hold a traced value
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load) and \
                    isinstance(node.value, ast.Name):
                self.rebound.add(node.value.id)
        self.rebound |= rebound
        for _ in range(4):
            before = len(self.names)
            for whole_target, whole_value in assigns:
                if depth < 2 and isinstance(whole_target, (ast.Tuple, ast.List)) and isinstance(whole_value, ast.Call):
                    parts = _helper_parts(model, whole_value, self.names, len(whole_target.elts), depth)
                    if parts is not None:  # `y, pad = helper(x)`: each name as the helper returns it
                        for elt, source in zip(whole_target.elts, parts):
                            for t in target_names(elt) if source is not None else ():
                                if t not in self.names and t not in rebound:
                                    self.names[t] = f"`{t}` (computed from {self.names[source]})"
                        continue
                for target, value in _pairs(whole_target, whole_value):
                    source = first_traced(model, value, self.names)
                    if source is None:
                        continue
                    for t in target_names(target):
                        if t not in self.names and t not in rebound:
                            self.names[t] = f"`{t}` (computed from {self.names[source]})"
            if len(self.names) == before:
                break


def _helper_parts(model: FileModel, call: ast.Call, names: Dict[str, str], width: int,
                  depth: int) -> Optional[List[Optional[str]]]:
    """Which parts of the tuple a module helper returns (`return x, pad`, every `return` a tuple of
    `width`) are computed from the traced arguments of `call`: per part the caller's traced name
    it comes from, or None where every return gives a value made without one (`pad`, built from
    `x.shape`). None when that cannot be read (no such helper, `*args`, a generator, a part
    that a loop, `with`, walrus or mutation binds)."""
    helper = named_function(model.index, call.func)
    if helper is None or isinstance(helper, ast.Lambda) or getattr(helper, "decorator_list", None) or \
            model.derivative_for_node(helper) is not None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    args = helper.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if len(call.args) > len(params) or args.vararg is not None:
        return None
    bound = list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords]
    if any(k is None for k, _ in bound):
        return None
    seeds: Dict[str, str] = {}
    sources: Dict[str, str] = {}
    for param, arg in bound:
        source = first_traced(model, arg, names)
        if source is not None:
            seeds[param], sources[param] = names[source], source
    own = list(model.facts.own_nodes(helper))
    if not seeds or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
        return None
    returns = [n for n in own if isinstance(n, ast.Return)]
    if not returns or any(not isinstance(r.value, ast.Tuple) or len(r.value.elts) != width or
                          any(isinstance(e, ast.Starred) for e in r.value.elts) for r in returns):
        return None
    taint = Taint(model, helper, seeds, depth + 1)
    first = next(iter(sources.values()), None)
    parts: List[Optional[str]] = []
    for i in range(width):
        elts = [r.value.elts[i] for r in returns]  # type: ignore[union-attr]
        if any(first_traced(model, e, taint.names) is not None or any(
                isinstance(n, ast.Name) and n.id in taint.rebound for n in ast.walk(e)) for e in elts):
            parts.append(next((sources[p] for e in elts for n in ast.walk(e) if isinstance(n, ast.Name)
                               for p in [n.id] if p in sources), first))
        else:
            parts.append(None)
    return parts


def target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from target_names(elt)


def traced(model: FileModel, e: ast.expr, traced: Dict[str, str]) -> bool:
    return first_traced(model, e, traced) is not None


def first_traced(model: FileModel, e: ast.AST, traced: Dict[str, str]) -> Optional[str]:
    """The first traced name `e` reads as data (not through `.shape`, `len(...)` or a nested
    function), or None."""
    if isinstance(e, ast.Name):
        return e.id if e.id in traced else None
    if isinstance(e, ast.Attribute) and (e.attr in STATIC_ATTRS or e.attr in model.facts.static_fields()):
        return None
    if isinstance(e, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Constant)):
        return None
    if isinstance(e, ast.Call):
        name = model.index.qualname(e.func) or ""
        if name in STATIC_CALLS or (name.startswith("numpy.") and name[6:] in METADATA):
            return None
    for child in child_nodes(e):  # (`ast.iter_child_nodes` without the expression contexts, which read no name)
        found = first_traced(model, child, traced)
        if found is not None:
            return found
    return None


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[Tuple[ast.expr, ast.expr]]:
    """`(x,), (dx,) = primals, tangents` pairs each target with its own value."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
            len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)
    else:
        yield target, value


def element_source(model: FileModel, test: ast.expr, traced: Dict[str, str]) -> Optional[str]:
    """The traced name an `all(...)`/`any(...)` test's comprehension iterates over."""
    for gen in getattr(test.args[0], "generators", []) if isinstance(test, ast.Call) and test.args else []:
        found = first_traced(model, gen.iter.args[0] if isinstance(gen.iter, ast.Call) and gen.iter.args
                             else gen.iter, traced)
        if found is not None:
            return found
    return None


def array_test(model: FileModel, test: ast.expr, traced: Dict[str, str]) -> Optional[ast.expr]:
    """The part of a condition that is an array computed from a traced value: a comparison of
    one, or a `jnp`/array method call on one (not a bare name: it may be a pytree)."""
    if isinstance(test, ast.BoolOp):
        return next((t for t in (array_test(model, v, traced) for v in test.values) if t is not None), None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return array_test(model, test.operand, traced)
    if isinstance(test, ast.Compare):
        if any(isinstance(op, IDENTITY) for op in test.ops):
            return None
        return test if first_traced(model, test, traced) is not None else None
    if isinstance(test, ast.Call):
        q = model.index.qualname(test.func) or ""
        if q in ("builtins.all", "builtins.any") and len(test.args) == 1 and isinstance(test.args[0], COMPREHENSIONS):
            # `all(jnp.all(jnp.isfinite(c)) for c in tree_leaves(g))`: Python's bool() of each element
            comp = test.args[0]
            bound = comprehension_targets(model, comp, lambda e: first_traced(model, e, traced) is not None)
            inner = {**traced, **{n: f"`{n}`, a leaf of a traced value" for n in bound if n not in traced}}
            return test if bound and array_test(model, comp.elt, inner) is not None else None
        array = q.startswith("jax.numpy.") or (isinstance(test.func, ast.Attribute) and test.func.attr in ("any", "all"))
        return test if array and first_traced(model, test, traced) is not None else None
    return None


def with_leaves(model: FileModel, fn: FunctionNode, traced: Dict[str, str]) -> Dict[str, str]:
    """`traced` and the names `fn`'s comprehensions and `for` loops bind to the values (or leaves)
    of a traced iterable: `c` in `max(float(np.abs(c).max()) for c in tree_leaves(g))`."""
    found = dict(traced)
    for node in model.facts.own_nodes(fn):
        if isinstance(node, (*COMPREHENSIONS, ast.DictComp)):
            comp: ast.AST = node
        elif isinstance(node, ast.For):
            comp = ast.GeneratorExp(elt=node.target, generators=[ast.comprehension(node.target, node.iter, [], 0)])
        else:
            continue
        source = element_source(model, ast.Call(func=ast.Name("all"), args=[comp], keywords=[]), traced)
        held = traced[source] if source is not None else "a traced value"
        for name in comprehension_targets(model, comp, lambda e: first_traced(model, e, traced) is not None):
            found.setdefault(name, f"`{name}`, an element of {held}")
    return found
