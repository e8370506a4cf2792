"""Array ranks relative to a function's parameters, where the code shows them.

`rank(x[..., 0])` is "rank of `x` minus one", `rank(jnp.sum(x))` is 0, `rank(sin(x) * t)` is the
broadcast of both. A rank is either absolute (`base` None) or `base`'s rank plus `offset`, where
`base` names a primal parameter; `floor` is the least rank of `base` the code allows (`jnp.sum(x,
axis=1)` needs `x` of rank 2 or more). Anything the rules below cannot read is None (unknown): the
comparisons that use these ranks stay silent on unknowns, so only provable mismatches are reported.
Linting never imports JAX; this reads the syntax and `model.facts.values()` (Python scalars).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.facts.registry import query

# Functions that keep their inputs' (broadcast) rank.
ELEMENTWISE = frozenset("""
abs absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh cbrt ceil clip conj conjugate cos cosh
divide erf erfc exp exp2 expit expm1 floor gelu hypot log log10 log1p log2 log_sigmoid logaddexp logit maximum
minimum multiply negative power reciprocal relu relu6 round rsqrt sigmoid sign silu sin sinh softplus sqrt
square subtract swish tan tanh true_divide where elu celu selu leaky_relu nan_to_num real imag heaviside copysign sinc
""".split())
# Reductions that give a scalar when no axis is named and keepdims is not set.
REDUCTIONS = frozenset("sum mean max min prod var std amax amin nansum nanmean logsumexp norm".split())
ARRAY_PREFIXES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.special.", "numpy.")


@dataclass(frozen=True)
class Rank:
    """A rank relative to a parameter's."""

    base: Optional[str]  # the parameter whose rank this is relative to; None: absolute
    offset: int
    why: str = ""
    floor: int = 0  # the least rank of `base` the code allows (an `axis=` needs that many axes)

    def shifted(self, by: int, why: str) -> "Rank":
        return Rank(self.base, self.offset + by, why, self.floor)

    def text(self) -> str:
        if self.base is None:
            return "a scalar" if self.offset == 0 else f"rank {self.offset}"
        if self.offset == 0:
            return f"the rank of `{self.base}`"
        return f"the rank of `{self.base}` {'+' if self.offset > 0 else '-'} {abs(self.offset)}"


@query(memo=False)
def differ(a: Optional[Rank], b: Optional[Rank]) -> bool:
    """True when the two ranks provably differ: same base or both absolute with other offsets, or
    an absolute rank below the least rank the other can have (its base's floor plus its offset)."""
    if a is None or b is None:
        return False
    if a.base == b.base:
        return a.offset != b.offset
    fixed, relative = (a, b) if a.base is None else (b, a) if b.base is None else (None, None)
    return fixed is not None and relative is not None and fixed.offset < relative.floor + relative.offset


@query(memo=False)
def agree_only_at_floor(a: Optional[Rank], b: Optional[Rank]) -> Optional[Rank]:
    """The relative one of an absolute and a relative rank that agree only when the base has its
    least allowed rank (`jnp.sum(d, axis=-1)` against a scalar: only a 1-D `d`); None otherwise."""
    if a is None or b is None or (a.base is None) == (b.base is None):
        return None
    fixed, relative = (a, b) if a.base is None else (b, a)
    return relative if relative.floor > 0 and fixed.offset == relative.floor + relative.offset else None


def broadcast(ranks: List[Optional[Rank]], why: str) -> Optional[Rank]:
    """The rank of an elementwise result: a scalar operand takes the other's rank."""
    known = [r for r in ranks if not (r is not None and r.base is None and r.offset == 0)]
    if not known:
        return Rank(None, 0, why) if ranks else None
    if any(r is None for r in known):
        return None
    bases = {r.base for r in known}  # type: ignore[union-attr]
    if len(bases) != 1:
        return None
    return Rank(known[0].base, max(r.offset for r in known), why,  # type: ignore[union-attr]
                max(r.floor for r in known))  # type: ignore[union-attr]


_QUOTED = (ast.Constant, ast.BinOp, ast.Subscript, ast.Attribute, ast.Call)  # what `_eval` can rank itself


class Ranks:
    """Ranks of expressions inside one function, given the ranks of some of its names."""

    MAX_DEPTH = 8

    def __init__(self, model: FileModel, fn: FunctionNode, env: Dict[str, Rank],
                 calls: Optional[Dict[str, FunctionNode]] = None,
                 seqs: Optional[Dict[str, List[Rank]]] = None) -> None:
        self.model = model
        self.fn = fn
        self.env = env
        self.seqs = seqs or {}  # names holding a tuple of ranked values (a jvp rule's primals)
        self.calls = calls or {}  # names of functions whose return rank is followed (the primal itself)
        self._depth = 0
        self._rebinding: set = set()  # parameters whose re-bindings are being read

    def of(self, e: ast.expr) -> Optional[Rank]:
        if self._depth > self.MAX_DEPTH:
            return None
        self._depth += 1
        try:
            return self._eval(e)
        finally:
            self._depth -= 1

    def at_least(self, e: ast.expr) -> FrozenSet[str]:
        """The parameters whose rank `e` provably has at least: an elementwise function or arithmetic
        has at least each operand's rank (`jnp.where(c, jnp.clip(x, 0, 1), x)`: `c`'s and `x`'s), and
        a call of the function itself at least what its return has, read through its arguments.
        Empty where the code does not show it (a matmul, a reduction, a helper)."""
        if self._depth > self.MAX_DEPTH:
            return frozenset()
        self._depth += 1
        try:
            return self._at_least(e)
        finally:
            self._depth -= 1

    def _at_least(self, e: ast.expr) -> FrozenSet[str]:
        exact = self.of(e)
        if exact is not None:
            return frozenset({exact.base}) if exact.base is not None and exact.offset >= 0 else frozenset()
        if isinstance(e, ast.Name):
            scope = self.model.index.scopes.get(self.fn)
            bindings = scope.bindings.get(e.id, []) if scope is not None else []
            if e.id not in self.env and len(bindings) == 1 and bindings[0].kind == "assign" \
                    and isinstance(bindings[0].node, ast.Assign) and bindings[0].value is not None \
                    and isinstance(bindings[0].node.targets[0], ast.Name):
                return self.at_least(bindings[0].value)
            return frozenset()
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.at_least(e.operand)
        if isinstance(e, ast.BinOp) and not isinstance(e.op, ast.MatMult):
            return self.at_least(e.left) | self.at_least(e.right)
        if not isinstance(e, ast.Call) or any(isinstance(a, ast.Starred) for a in e.args):
            return frozenset()
        q = self.model.index.qualname(e.func) or ""
        if q.startswith(ARRAY_PREFIXES) and q.rsplit(".", 1)[-1] in ELEMENTWISE and not e.keywords:
            return frozenset().union(*(self.at_least(a) for a in e.args))
        if isinstance(e.func, ast.Name) and e.func.id in self.calls and not e.keywords:
            callee = self.calls[e.func.id]
            sig = self.model.signature(callee)
            returned = [value for _, value in self.model.facts.returns_of(callee)]
            if sig.vararg or len(e.args) != len(sig.positional) or len(returned) != 1 or returned[0] is None:
                return frozenset()
            inner = Ranks(self.model, callee, {p: Rank(p, 0, f"`{p}`") for p in sig.positional})
            inner._depth = self._depth
            args = dict(zip(sig.positional, e.args))
            return frozenset().union(*(self.at_least(args[p]) for p in inner.at_least(returned[0])))
        return frozenset()

    def _eval(self, e: ast.expr) -> Optional[Rank]:
        if isinstance(e, ast.Name):
            return self._name(e)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.of(e.operand)
        if not isinstance(e, _QUOTED):
            return None
        quoted = f"`{self.model.quote(e, 40)}`"  # what a rank made here says it comes from
        if isinstance(e, ast.Constant):
            ok = isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
            return Rank(None, 0, quoted) if ok else None
        if isinstance(e, ast.BinOp) and not isinstance(e.op, ast.MatMult):
            return broadcast([self.of(e.left), self.of(e.right)], quoted)
        if isinstance(e, ast.Subscript):
            return self._subscript(e, quoted)
        if isinstance(e, ast.Attribute) and e.attr in ("T", "real", "imag", "mT"):
            inner = self.of(e.value)
            return None if inner is None else Rank(inner.base, inner.offset, quoted, inner.floor)
        if isinstance(e, ast.Call):
            return self._call(e, quoted)
        return None

    def _name(self, e: ast.Name) -> Optional[Rank]:
        scope = self.model.index.scopes.get(self.fn)
        bindings = scope.bindings.get(e.id, []) if scope is not None else []
        if e.id in self.env:
            return self.env[e.id] if len(bindings) <= 1 else self._rebound(e.id, bindings)
        if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].node, ast.Assign) \
                and bindings[0].value is not None:
            return self.of(bindings[0].value)
        if bindings and all(b.kind == "param" for b in bindings) or not bindings:
            kind = self.model.facts.values().of(e)
            if kind.tag == "scalar":
                return Rank(None, 0, f"`{e.id}` is a Python scalar ({kind.why})" if kind.why else f"`{e.id}`")
        return None

    def _rebound(self, name: str, bindings) -> Optional[Rank]:
        """A parameter re-bound in the function keeps its rank where every re-binding is a plain
        assignment of a value of that rank (`v = jnp.abs(v)`); unknown otherwise."""
        rank = self.env[name]
        if name in self._rebinding:
            return rank  # the value read inside a re-binding: the parameter's, or an equal one
        self._rebinding.add(name)
        try:
            for b in bindings:
                if b.kind == "param":
                    continue
                node = b.node
                if b.kind != "assign" or b.value is None or not isinstance(node, ast.Assign) \
                        or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                    return None
                got = self.of(b.value)
                if got is None or got.base != rank.base or got.offset != rank.offset:
                    return None
            return rank
        finally:
            self._rebinding.discard(name)

    def _subscript(self, e: ast.Subscript, quoted: str) -> Optional[Rank]:
        if isinstance(e.value, ast.Name) and e.value.id in self.seqs:
            items = self.seqs[e.value.id]
            key = e.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, int) and -len(items) <= key.value < len(items):
                return items[key.value]
            return None
        base = self.of(e.value)
        if base is None:
            return None
        keys = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        change = 0
        for key in keys:
            if isinstance(key, ast.Slice) or isinstance(key, ast.Constant) and key.value is Ellipsis:
                continue
            if isinstance(key, ast.Constant) and key.value is None:
                change += 1
            elif isinstance(key, ast.Constant) and isinstance(key.value, int) and not isinstance(key.value, bool) or \
                    isinstance(key, ast.UnaryOp) and isinstance(key.operand, ast.Constant):
                change -= 1
            else:
                return None  # an array index or a name: unknown
        return base.shifted(change, quoted)

    def _call(self, e: ast.Call, quoted: str) -> Optional[Rank]:
        if any(isinstance(a, ast.Starred) for a in e.args):
            return None
        q = self.model.index.qualname(e.func) or ""
        tail = q.rsplit(".", 1)[-1]
        if q.startswith(ARRAY_PREFIXES):
            if tail in ELEMENTWISE and not e.keywords:
                return broadcast([self.of(a) for a in e.args], quoted)
            if tail in REDUCTIONS and len(e.args) == 1 and not e.keywords:
                return Rank(None, 0, f"{quoted} reduces over every axis")
            if tail in REDUCTIONS and e.args and not (tail == "norm" and len(e.args) > 1):  # norm(x, ord)
                return self._reduced(e.args[0], e.args[1:2], e.keywords, quoted)
            return None
        if isinstance(e.func, ast.Attribute) and not q:
            method = e.func.attr
            if method in REDUCTIONS and not e.args and not e.keywords and self.of(e.func.value) is not None:
                return Rank(None, 0, f"{quoted} reduces over every axis")
            if method in REDUCTIONS:
                return self._reduced(e.func.value, e.args, e.keywords, quoted)
            if method in ("astype", "conj"):
                inner = self.of(e.func.value)
                return None if inner is None else Rank(inner.base, inner.offset, quoted, inner.floor)
            return None
        if isinstance(e.func, ast.Name) and e.func.id in self.calls and not e.keywords:
            return self._followed(self.calls[e.func.id], e, quoted)
        return None

    def _reduced(self, operand: ast.expr, args: List[ast.expr], keywords: List[ast.keyword],
                 quoted: str) -> Optional[Rank]:
        """A reduction over named axes (`jnp.sum(x, axis=-1)`, `x.mean(1, keepdims=True)`): one axis
        fewer per named axis unless `keepdims`; each axis needs the operand to have that many."""
        kw = {k.arg: k.value for k in keywords}
        if None in kw or set(kw) - {"axis", "keepdims"} or len(args) > 1 or args and "axis" in kw:
            return None
        axis = args[0] if args else kw.get("axis")
        keep = kw.get("keepdims")
        if keep is not None and not (isinstance(keep, ast.Constant) and isinstance(keep.value, bool)):
            return None
        axes = axis.elts if isinstance(axis, ast.Tuple) else [axis]
        numbers = [_int(a) for a in axes]
        inner = self.of(operand)
        if inner is None or not numbers or any(n is None for n in numbers):
            return None
        needed = max(n + 1 if n >= 0 else -n for n in numbers if n is not None)
        floor = max(inner.floor, needed - inner.offset) if inner.base is not None else 0
        dropped = 0 if keep is not None and keep.value else len(numbers)
        return Rank(inner.base, inner.offset - dropped, quoted, floor)

    def _followed(self, callee: FunctionNode, e: ast.Call, quoted: str) -> Optional[Rank]:
        """A call of the primal: its return's rank with its parameters' ranks from the arguments."""
        sig = self.model.signature(callee)
        if sig.vararg or len(e.args) != len(sig.positional):
            return None
        env = {p: r for p, r in ((p, self.of(a)) for p, a in zip(sig.positional, e.args)) if r is not None}
        inner = Ranks(self.model, callee, env)
        inner._depth = self._depth
        returned = [value for _, value in self.model.facts.returns_of(callee)]
        if len(returned) != 1 or returned[0] is None:
            return None
        found = inner.of(returned[0])
        return None if found is None else Rank(found.base, found.offset, f"{quoted} ({found.why})", found.floor)


def _int(e: Optional[ast.expr]) -> Optional[int]:
    """The value of an integer literal, `-1` included; None for anything else."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _int(e.operand)
        return None if inner is None else -inner
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


@query(memo=False)  # a fresh Ranks per ask (it fills its own tables as it is read)
def own_ranks(model: FileModel, fn: FunctionNode) -> Ranks:
    """Ranks inside `fn` relative to its own positional parameters."""
    sig = model.signature(fn)
    return Ranks(model, fn, {p: Rank(p, 0, f"`{p}`") for p in sig.positional})


@query(memo=False)
def ranks(model: "FileModel", fn: FunctionNode, env: Dict[str, Rank], calls: Optional[Dict[str, FunctionNode]] = None,
          seqs: Optional[Dict[str, List[Rank]]] = None) -> Ranks:
    """Ranks of expressions inside `fn`, given the ranks `env` of some of its names: a fresh analysis."""
    return Ranks(model, fn, env, calls, seqs)


@query(memo=False)
def paired_leaves(primal: ast.expr, tangent: ast.expr) -> List[Tuple[ast.expr, ast.expr]]:
    """A rule's primal and tangent outputs paired leaf by leaf where both are tuple or list
    literals of one length (`(sinf, cosf), (sinf_dot, cosf_dot)`), else the pair itself."""
    if isinstance(primal, (ast.Tuple, ast.List)) and isinstance(tangent, (ast.Tuple, ast.List)) \
            and len(primal.elts) == len(tangent.elts) and primal.elts:
        return [pair for p, t in zip(primal.elts, tangent.elts) for pair in paired_leaves(p, t)]
    return [(primal, tangent)]


@query(memo=False)
def container_pairs(primal: ast.expr, tangent: ast.expr) -> List[Tuple[ast.expr, ast.expr]]:
    """Inside a rule's primal and tangent outputs written as the same literal container (tuples
    or lists of one length, dicts of the same constant keys, calls of the same class with as many
    positional fields: a NamedTuple), the pairs of values in the same place, descending while
    both sides are such containers; [] when the outputs are not. What VJP333 compares below the
    outermost level (`(out,), ((t,),)`)."""
    def inner(p: ast.expr, t: ast.expr) -> Optional[List[Tuple[ast.expr, ast.expr]]]:
        if isinstance(p, (ast.Tuple, ast.List)) and isinstance(t, (ast.Tuple, ast.List)) and p.elts and \
                len(p.elts) == len(t.elts) and not any(isinstance(e, ast.Starred) for e in (*p.elts, *t.elts)):
            return list(zip(p.elts, t.elts))
        if isinstance(p, ast.Dict) and isinstance(t, ast.Dict) and p.keys and \
                all(isinstance(k, ast.Constant) for k in (*p.keys, *t.keys)):
            keys = {k.value: v for k, v in zip(p.keys, p.values)}  # type: ignore[union-attr]
            tkeys = {k.value: v for k, v in zip(t.keys, t.values)}  # type: ignore[union-attr]
            return [(keys[k], tkeys[k]) for k in keys] if set(keys) == set(tkeys) else None
        if isinstance(p, ast.Call) and isinstance(t, ast.Call) and isinstance(p.func, ast.Name) and \
                isinstance(t.func, ast.Name) and p.func.id == t.func.id and p.func.id.lstrip("_")[:1].isupper() and \
                p.args and len(p.args) == len(t.args) and not p.keywords and not t.keywords:
            return list(zip(p.args, t.args))
        return None

    out: List[Tuple[ast.expr, ast.expr]] = []
    todo = inner(primal, tangent) or []
    while todo:
        p, t = todo.pop(0)
        deeper = inner(p, t)
        if deeper is None:
            out.append((p, t))
        else:
            todo.extend(deeper)
    return out


@query(memo=False)
def scaled_by(operand: ast.expr, value: ast.expr) -> List[str]:
    """`[name]` when `value` is a name that `operand` combines elementwise with arithmetic
    (`cosf * f_dot`, `-(c + t) / 2`): the operand has at least that name's rank. Empty otherwise."""
    if not isinstance(value, ast.Name):
        return []
    todo = [operand]
    while todo:
        e = todo.pop()
        if isinstance(e, ast.Name) and e.id == value.id:
            return [value.id]
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div, ast.Add, ast.Sub)):
            todo += [e.left, e.right]
        elif isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            todo.append(e.operand)
    return []


# Functions whose result may be a scalar whatever their operands' rank (contractions, determinants).
SCALAR_MAKERS = frozenset("dot vdot inner trace det slogdet norm logsumexp cond matrix_rank einsum tensordot matmul".split())


@query
def may_be_scalar(model: FileModel, expr: ast.expr, depth: int = 0) -> bool:
    """Whether anything the source shows may make `expr` a scalar: a reduction without `axis=`
    (`jnp.sum(v)`, `v.mean()`), a contraction (`jnp.dot`, `jnp.trace`, `norm`), an integer index
    (`q[0]`), a Python number or `float(...)`, a name not followed, or a function of the module
    (the custom function itself) whose return may be; arithmetic and array functions broadcast,
    so their result may be a scalar only when every operand may. A parameter is taken as the
    array it is differentiated as; a call nothing here shows (a library's solver, a callback)
    is not taken as scalar."""
    if depth > 5:
        return True
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Subscript):
        index = expr.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        return any(isinstance(p, (ast.Constant, ast.UnaryOp, ast.Name)) for p in parts) or \
            may_be_scalar(model, expr.value, depth + 1)
    if isinstance(expr, ast.Name):
        bindings = model.index.lookup(expr.id, model.index.scope_of(expr))
        if len(bindings) == 1 and bindings[0].kind == "param":
            return False
        if len(bindings) != 1 or bindings[0].kind != "assign":
            return True  # a loop variable, a name bound several times: not followed
        value = bindings[0].value
        if value is None:  # `a, b = f(x)`: the element of what `f` returns, where it shows one
            return _unpacked_may_be_scalar(model, expr.id, bindings[0].node, depth)
        return may_be_scalar(model, value, depth + 1)
    if isinstance(expr, ast.IfExp):
        return may_be_scalar(model, expr.body, depth + 1) or may_be_scalar(model, expr.orelse, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.MatMult):
        return True  # `x @ x`: a contraction, a scalar for vectors
    if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
        return all(may_be_scalar(model, c, depth + 1) for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr))
    if isinstance(expr, ast.Call):
        return _call_may_be_scalar(model, expr, depth)
    return True


def _call_may_be_scalar(model: FileModel, expr: ast.Call, depth: int) -> bool:
    q = model.index.qualname(expr.func) or ""
    last = q.rsplit(".", 1)[-1]
    reduces = (last in REDUCTIONS or last in SCALAR_MAKERS) and not any(k.arg == "axis" for k in expr.keywords)
    if q in ("builtins.float", "builtins.int", "builtins.sum", "builtins.len", "builtins.abs", "builtins.max",
             "builtins.min"):
        return True
    if isinstance(expr.func, ast.Attribute) and not q:  # a method: `v.sum()`, `v.astype(...)`
        attr = expr.func.attr
        if (attr in REDUCTIONS or attr in SCALAR_MAKERS) and not expr.args and not expr.keywords or \
                attr in ("item", "tolist"):
            return True
        return may_be_scalar(model, expr.func.value, depth + 1) if attr in ("astype", "conj", "real", "imag") else True
    if q.startswith(ARRAY_PREFIXES):
        operands = [a for a in expr.args if not isinstance(a, ast.Starred)]
        return reduces or not operands or all(may_be_scalar(model, a, depth + 1) for a in operands)
    d = model.facts.derivative_named(expr.func)
    target = d.primal if d is not None else named_function(model.index, expr.func)
    if isinstance(target, ast.Lambda):
        return may_be_scalar(model, target.body, depth + 1)
    if target is not None:
        values = [v for _, v in model.facts.returns_of(target) if v is not None]
        return not values or any(may_be_scalar(model, v, depth + 1) for v in values)
    return False


def _unpacked_may_be_scalar(model: FileModel, name: str, stmt: ast.AST, depth: int) -> bool:
    """`a, b = f(x)` (or `a, b = out = f(x)`): whether `f`'s return at `name`'s place may be a scalar."""
    if not isinstance(stmt, ast.Assign):
        return True
    for target in stmt.targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            places = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name]
            if places and isinstance(stmt.value, ast.Call):
                d = model.facts.derivative_named(stmt.value.func)
                fn = d.primal if d is not None else named_function(model.index, stmt.value.func)
                if fn is None or isinstance(fn, ast.Lambda):
                    return not (isinstance(stmt.value.func, ast.Attribute) and
                                (model.index.qualname(stmt.value.func) or "").startswith(ARRAY_PREFIXES))
                values = [v for _, v in model.facts.returns_of(fn) if v is not None]
                return any(not isinstance(v, (ast.Tuple, ast.List)) or len(v.elts) != len(target.elts) or
                           may_be_scalar(model, v.elts[places[0]], depth + 1) for v in values) or not values
    return True


# Transformations whose result takes the function's arguments unchanged (`jax.grad(f)(x)` passes `x` to `f`).
_RANK_KEEPING = frozenset({"jax.grad", "jax.value_and_grad", "jax.jit", "jax.checkpoint", "jax.remat", "jax.jacrev",
                           "jax.jacfwd", "jax.hessian", "jax.named_call"})
_REGISTRATIONS = frozenset({"defjvp", "defjvps", "defvjp", "def_fwd", "def_bwd", "def_jvp"})


@query
def called_rank(model: FileModel, d, param: str) -> Optional[Tuple[int, ast.Call]]:
    """The rank every call of custom derivative `d` in this module passes for its parameter
    `param`, with one such call, where each call's argument has a rank the code shows outright
    (`f(jnp.sum(x * x) + 1.0)`: a scalar) and they agree; None where any does not, or where the
    module uses `d` otherwise than by calling it (handed to `vmap`, stored: other ranks may reach it)."""
    if d.primal is None:
        return None
    sig = model.signature(d.primal)
    if param not in sig.positional or sig.vararg is not None:
        return None
    i = sig.positional.index(param)
    own = {d.primal, *(r.node for reg in d.registrations for r in reg.rules if r.node is not None)}
    found: Optional[Tuple[int, ast.Call]] = None
    for node in model.index.of_type(ast.Name):
        if node.id != d.name or not isinstance(node.ctx, ast.Load) or model.facts.derivative_named(node) is not d:
            continue
        parent = model.index.parent(node)
        if isinstance(parent, ast.Attribute) and parent.attr in _REGISTRATIONS:
            continue
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node \
                and model.index.qualname(parent.func) in _RANK_KEEPING:
            outer = model.index.parent(parent)  # `jax.grad(f)(x, y)`: the arguments reach `f` as they are
            if isinstance(outer, ast.Call) and outer.func is parent:
                node, parent = parent, outer
        if not (isinstance(parent, ast.Call) and parent.func is node) or \
                any(isinstance(a, ast.Starred) for a in parent.args) or any(k.arg is None for k in parent.keywords):
            return None
        arg = parent.args[i] if i < len(parent.args) else next((k.value for k in parent.keywords if k.arg == param), None)
        fn = model.index.enclosing_function(parent)
        if fn in own:
            continue  # the rule calling the function on the primal JAX passed it: the outer call's value
        if arg is None or fn is None:
            return None
        rank = own_ranks(model, fn).of(arg)
        made = model.facts.made_rank(arg) if rank is None or rank.base is not None else None
        n = rank.offset if rank is not None and rank.base is None else made if made is not None and made >= 2 else None
        if n is None or found is not None and found[0] != n:
            return None  # (a made rank is a least one: kept only where it is two or more)
        found = found or (n, parent)
    return found


@query
def scalar_evidence(model: FileModel, fn: FunctionNode, param: str) -> Optional[ast.expr]:
    """A `lax.cond` predicate (`lax.switch` index) in `fn` that has `param`'s rank (`x > 0`,
    `(x > 0) & (v > 0)`, a branch of a conditional expression): JAX requires it to be a scalar,
    so `param` is one; None when no such predicate shows it."""
    ranks = None
    for call in model.facts.calls_in(fn):
        if model.index.qualname(call.func) not in ("jax.lax.cond", "jax.lax.switch") or not call.args:
            continue
        ranks = ranks or own_ranks(model, fn)
        for operand in _predicate_operands(call.args[0]):
            rank = ranks.of(operand)
            if rank is not None and rank.base == param and rank.offset == 0:
                return call.args[0]
    return None


def _predicate_operands(e: ast.expr) -> List[ast.expr]:
    """The values a predicate compares or combines, each of which has the predicate's rank or less."""
    if isinstance(e, ast.Compare):
        return [e.left, *e.comparators]
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _predicate_operands(e.left) + _predicate_operands(e.right)
    if isinstance(e, ast.IfExp):
        return _predicate_operands(e.body) + _predicate_operands(e.orelse)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.Not, ast.Invert)):
        return _predicate_operands(e.operand)
    return [e] if isinstance(e, ast.Name) else []
