"""The calling contract of a custom derivative, and what its rules give back, as structures.

JAX calls each rule in one way (docs/facts/structure.md): fwd with all the primal's arguments in
order; bwd with `*nondiff, residuals, cotangent`; a defjvp rule with `*nondiff, primals, tangents`
(`primals` and `tangents` tuples in the order of the differentiable parameters); each `defjvps`
rule with `(g, ans, *primals)`. It expects back: from fwd a pair whose first element has the primal
output's structure; from bwd a tuple or list with one entry per differentiable argument; from a jvp
rule a pair of primal output and tangent with the same structure (a defjvps rule: one tangent of
the output's structure).

`Contract` holds the positions and names of one derivative. `structure()` evaluates an
expression of a rule to a `Struct` (an array, a tuple or list of n entries, None) through
literals, names bound once, calls of the primal, of helpers (their every return agreeing) and
lambdas, and arithmetic with an array; None when the code does not show it. The rule's own
parameters get the structure JAX passes them: a cotangent and a tangent of a custom function
whose output is one array are arrays.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
import re
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from vjplint.facts.values import ARITHMETIC, TREE_MAPS
from vjplint.facts.dependence import zero_cotangent
from vjplint.facts.registry import query
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.syntax.walk import walk

if TYPE_CHECKING:
    from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction

ARRAY, TUPLE, LIST, NONE = "array", "tuple", "list", "None"
MAX_DEPTH = 4
SELECTS = frozenset({"jax.numpy.where", "numpy.where", "jax.lax.select"})


class Struct(NamedTuple):
    kind: str      # "array", "tuple", "list" or "None"
    length: int    # entries of a tuple or list; 1 otherwise
    why: str       # the evidence, for messages

    def same_as(self, other: "Struct") -> bool:
        return self.kind == other.kind and (self.kind not in (TUPLE, LIST) or self.length == other.length)

    def describe(self) -> str:
        if self.kind in (TUPLE, LIST):
            return f"a {self.length}-element {self.kind}"
        return "one array" if self.kind == ARRAY else "None"


class Contract(NamedTuple):
    params: Tuple[str, ...]           # the primal's positional parameters as callers see them
    nondiff: Tuple[int, ...]
    diff_names: Tuple[str, ...]       # the differentiable parameters, in the order JAX passes them
    # Other names the rules give a differentiable parameter's value, by how values flow (not by
    # how they are spelled): (name, parameter) pairs, from `slot_aliases`.
    aliases: Tuple[Tuple[str, str], ...] = ()


@query
def contract_of(model: "FileModel", d: "CustomDerivative") -> Optional[Contract]:
    sig = d.signature
    if sig is None or d.nondiff_unresolved:
        return None
    params = tuple(sig.positional)
    if any(i >= len(params) for i in d.nondiff):
        return None
    diff = tuple(p for i, p in enumerate(params) if i not in d.nondiff)
    return Contract(params, tuple(d.nondiff), diff, slot_aliases(model, d, params, diff))


@query(on_cycle=None)  # a primal that calls itself: None while its structure is computed
def primal_output(model: "FileModel", d: "CustomDerivative") -> Optional[Struct]:
    """The structure every return of the primal has, when they agree and the code shows it."""
    if d.primal is None:
        return None
    found: Optional[Struct] = None
    returns = model.facts.returns_of(d.primal)
    for _, value in returns:
        s = structure(model, d, value, d.primal, {}) if value is not None else Struct(NONE, 1, "a bare return")
        if s is None or found is not None and not found.same_as(s):
            found = None
            break
        found = s
    if found is not None and returns:
        shown = model.quote(returns[0].value, 40) if returns[0].value is not None else "None"
        found = Struct(found.kind, found.length, f"`{d.name}` returns `{shown}`")
    return found if returns else None


@query
def unpacked_output(model: "FileModel", d: "CustomDerivative") -> Optional[Tuple[int, ast.Assign]]:
    """How many names the module unpacks a call of `d` into (`U, s, Vt = f(a)`), with the first
    such assignment, when every unpacking of its calls agrees: the function's output is a
    sequence of that length whatever its code shows (a library's `svd`). None otherwise."""
    return model.facts.call_unpackings().get(d)


@query
def call_unpackings(model: "FileModel") -> Dict["CustomDerivative", Optional[Tuple[int, ast.Assign]]]:
    """`unpacked_output` for every custom derivative of the module, in one pass over its assignments."""
    found: Dict["CustomDerivative", Optional[Tuple[int, ast.Assign]]] = {}
    for node in model.index.of_type(ast.Assign):
        target = node.targets[0]
        if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, ast.Call)) or \
                any(isinstance(e, ast.Starred) for e in target.elts):
            continue
        d = model.facts.derivative_named(node.value.func)
        if d is None:
            continue
        if d in found:
            seen = found[d]
            if seen is not None and seen[0] != len(target.elts):
                found[d] = None
        else:
            found[d] = (len(target.elts), node)
    return found


@query
def rule_environment(model: "FileModel", d: "CustomDerivative", fn: FunctionNode, role: str,
                     bound: int = 0) -> Dict[str, Struct]:
    """The structures JAX gives a rule's parameters that this module shows: the cotangent of
    bwd, each defjvps rule's `g` and `ans`, and the entries of a jvp rule's `tangents` unpacked."""
    out = model.facts.primal_output(d)
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args][bound:]
    env: Dict[str, Struct] = {}
    contract = contract_of(model, d)
    if role == "defjvp" and len(params) >= 2 and not fn.args.vararg and contract is not None and \
            d.signature is not None and d.signature.vararg is None:
        n = len(contract.diff_names)  # JAX passes `primals` and `tangents` as tuples, one entry per argument
        for param, what in zip(params[-2:], ("primals", "tangents")):
            if _never_rebound(model, fn, param):
                env[param] = Struct(TUPLE, n, f"`{param}`, the {what} JAX passes, one per differentiable argument")
    if role == "bwd" and len(params) >= 2 and not fn.args.vararg and _never_rebound(model, fn, params[-2]):
        saved = residual_structure(model, d)
        if saved is not None:
            env[params[-2]] = saved
    if out is None or out.kind != ARRAY:
        return env
    if role == "bwd" and params and not fn.args.vararg:
        env[params[-1]] = Struct(ARRAY, 1, f"the cotangent of `{d.name}`'s output, which is one array")
    if role == "defjvps" and len(params) >= 2:
        env[params[0]] = Struct(ARRAY, 1, f"the tangent of `{d.name}`'s output, which is one array")
        env[params[1]] = Struct(ARRAY, 1, f"`{d.name}`'s output, which is one array")
    return env


def _never_rebound(model: "FileModel", fn: FunctionNode, param: str) -> bool:
    """`param` keeps what JAX passed it: `fn` never assigns it (`[x], [tx] = x, tx` rebinds both)."""
    scope = model.index.scopes.get(fn)
    return scope is not None and all(b.kind == "param" for b in scope.bindings.get(param, []))


@query
def residual_structure(model: "FileModel", d: "CustomDerivative") -> Optional[Struct]:
    """The structure of the residuals bwd receives: the second element of every fwd return, when
    each fwd registered for `d` returns a literal pair and they all agree."""
    found: Optional[Struct] = None
    for _, fwd, _ in model.facts.checked_vjp_rules(d):
        if fwd is None or fwd.node is None:
            return None
        fn = model.facts.through_wrapper(fwd.node)
        returns = model.facts.returns_of(fn)
        if not returns:
            return None
        for _, value in returns:
            if not (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2) or \
                    any(isinstance(e, ast.Starred) for e in value.elts):
                return None
            s = structure(model, d, value.elts[1], fn, {})
            if s is None or found is not None and not found.same_as(s):
                return None
            found = s
    if found is None:
        return None
    return Struct(found.kind, found.length, "the residuals fwd returns")


@query
def structure(model: "FileModel", d: "CustomDerivative", expr: Optional[ast.expr], fn: FunctionNode,
              env: Dict[str, Struct], depth: int = 0) -> Optional[Struct]:
    """What `expr`, evaluated in `fn`, is as a structure; None when the code does not show it."""
    if expr is None or depth > MAX_DEPTH:
        return None
    if isinstance(expr, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in expr.elts):
            return None
        return Struct(TUPLE if isinstance(expr, ast.Tuple) else LIST, len(expr.elts), "a literal")
    if isinstance(expr, ast.Constant):
        return Struct(NONE, 1, "None") if expr.value is None else None
    if isinstance(expr, ast.Name) and expr.id in env:
        return env[expr.id]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow,
                                                            ast.MatMult, ast.FloorDiv, ast.Mod)):
        sides = [structure(model, d, e, fn, env, depth + 1) for e in (expr.left, expr.right)]
        if any(s is not None and s.kind == ARRAY for s in sides) and not any(
                s is not None and s.kind in (TUPLE, LIST) for s in sides):
            return Struct(ARRAY, 1, f"`{model.quote(expr, 40)}`, arithmetic on an array")
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        s = structure(model, d, expr.operand, fn, env, depth + 1)
        if s is not None and s.kind == ARRAY:
            return s
    if isinstance(expr, ast.Call):
        q = model.index.qualname(expr.func) or ""
        if q in SELECTS and len(expr.args) == 3 and not expr.keywords:  # `where(c)` alone gives a tuple
            return Struct(ARRAY, 1, f"`{model.quote(expr, 40)}`, an array")
        if q in TREE_MAPS and len(expr.args) >= 2 and not expr.keywords:  # the first tree's structure
            tree = structure(model, d, expr.args[1], fn, env, depth + 1)
            if tree is not None and tree.kind != ARRAY:  # over one array it is the function's value: below
                return Struct(tree.kind, tree.length, f"`{model.quote(expr, 40)}`, mapped over {tree.describe()} ({tree.why})")
        if q in ("builtins.tuple", "builtins.list") and len(expr.args) == 1 and not expr.keywords:
            inner = expr.args[0]
            seq = _comprehended(model, d, inner, fn, env, depth) if isinstance(inner, ast.GeneratorExp) else \
                structure(model, d, inner, fn, env, depth + 1)
            if seq is not None and (seq.kind == TUPLE or seq.kind == LIST and not _named(inner)):
                return Struct(TUPLE if q == "builtins.tuple" else LIST, seq.length, f"`{model.quote(expr, 40)}`, {seq.why}")
        target = model.facts.derivative_named(expr.func)
        if target is d:
            return model.facts.primal_output(d)
        helper = named_function(model.index, expr.func)
        star = helper.args.vararg.arg if helper is not None and helper.args.vararg is not None else None
        if star and not helper.args.args and not helper.args.posonlyargs and model.facts.returns_of(helper) and \
                all(isinstance(v, ast.Name) and v.id == star for _, v in model.facts.returns_of(helper)) and \
                not any(isinstance(a, ast.Starred) for a in expr.args):  # `def err(*args): return args`
            return Struct(TUPLE, len(expr.args), f"`{model.quote(expr, 40)}`, which returns the tuple of its arguments")
        if helper is not None and helper is not fn and not isinstance(helper, ast.AsyncFunctionDef):
            found = _returns_structure(model, d, helper, depth + 1)
            if found is not None:
                return Struct(found.kind, found.length, f"`{model.quote(expr, 40)}`, which returns {found.describe()}")
    if isinstance(expr, ast.Name):
        scope = model.index.scopes.get(fn)
        bindings = scope.bindings.get(expr.id, []) if scope is not None else []
        if bindings and all(b.kind == "assign" and b.value is not None and isinstance(b.node, ast.Assign)
                            and isinstance(b.node.targets[0], ast.Name) for b in bindings):
            # every assignment (`result = ...`, then `if m: result = jnp.where(...)`) with one
            # structure: whichever reaches the use, the name has it
            found: Optional[Struct] = None
            for b in bindings:
                inner = structure(model, d, b.value, fn, env, depth + 1)
                if inner is None or found is not None and not found.same_as(inner):
                    return None
                found = inner
            assert found is not None
            first = bindings[0].value
            shown = f"`{expr.id}` = `{model.quote(first, 40)}`" + (
                f" (and {len(bindings) - 1} more assignment{'s' if len(bindings) > 2 else ''} like it)" if len(bindings) > 1 else "")
            return Struct(found.kind, found.length, shown)
    if isinstance(expr, ast.ListComp):
        seq = _comprehended(model, d, expr, fn, env, depth)
        if seq is not None:
            return Struct(LIST, seq.length, f"`{model.quote(expr, 40)}`, {seq.why}")
    if isinstance(expr, ast.Subscript) and _array_index(expr.slice):
        return Struct(ARRAY, 1, f"`{model.quote(expr, 40)}`, an array indexed along several axes")
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and isinstance(expr.value, ast.Call):
        element = _element_structure(model, d, expr.value, expr.slice.value, depth)
        if element is not None:  # `f(x)[0]`, `f(x)["value"]`: the element the function's literal returns hold there
            return Struct(element.kind, element.length, f"`{model.quote(expr, 40)}`, {element.describe()}")
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Call):
        element = _element_structure(model, d, expr.value, ("field", expr.attr), depth)
        if element is not None:  # `f(x).value` of a function returning `Box(...)`, a NamedTuple
            return Struct(element.kind, element.length, f"`{model.quote(expr, 40)}`, {element.describe()}")
    kind = model.facts.values().of(expr)
    if kind.tag in (TUPLE, LIST) and kind.items is not None:
        return Struct(kind.tag, len(kind.items), kind.why or "inferred")
    why = model.facts.not_a_sequence(expr, fn)
    if why == "an array":
        return Struct(ARRAY, 1, f"`{model.quote(expr, 40)}`, an array")
    if why == ARITHMETIC or why == "a constant":  # a leaf: arithmetic on a tuple raises
        return Struct(ARRAY, 1, f"`{model.quote(expr, 40)}`, {why}")
    return None


def _comprehended(model: "FileModel", d: "CustomDerivative", comp: ast.expr, fn: FunctionNode,
                  env: Dict[str, Struct], depth: int) -> Optional[Struct]:
    """How many entries `(e for x in xs)` gives, as a sequence with its evidence: one generator
    without a condition over a sequence whose length the code shows (`zip(a, b)`: every one
    shown, the shortest; `enumerate(a)`: `a`'s)."""
    gens = getattr(comp, "generators", None)
    if not gens or len(gens) != 1 or gens[0].ifs or gens[0].is_async:
        return None
    it = gens[0].iter
    parts = [it]
    if isinstance(it, ast.Call) and not it.keywords and it.args and \
            (model.index.qualname(it.func) or "") in ("builtins.zip", "builtins.enumerate") and \
            not any(isinstance(a, ast.Starred) for a in it.args):
        parts = it.args if model.index.qualname(it.func) == "builtins.zip" else it.args[:1]
    shown: List[Tuple[ast.expr, Struct]] = []
    for part in parts:
        s = structure(model, d, part, fn, env, depth + 1)
        if s is None or s.kind not in (TUPLE, LIST) or s.kind == LIST and _named(part):
            return None  # a list bound to a name may have grown since (`append`)
        shown.append((part, s))
    part, s = min(shown, key=lambda p: p[1].length)
    evidence = "" if isinstance(part, (ast.Tuple, ast.List)) else f" ({s.why})"
    return Struct(LIST, s.length, f"one entry per element of `{model.quote(part, 30)}`, {s.describe()}{evidence}")


def _named(expr: ast.expr) -> bool:
    return isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript))


def _array_index(key: ast.expr) -> bool:
    """`x[i, ...]`, `x[:, None]`, `x[...]`: an index only an array takes (a tuple or list raises on it)."""
    keys = key.elts if isinstance(key, ast.Tuple) else [key] if isinstance(key, ast.Constant) else []
    return len(keys) > 1 and any(isinstance(k, ast.Slice) or isinstance(k, ast.Constant) and k.value in (None, Ellipsis)
                                 for k in keys) or \
        len(keys) == 1 and isinstance(keys[0], ast.Constant) and keys[0].value is Ellipsis


def _element_structure(model: "FileModel", d: "CustomDerivative", call: ast.Call, key: object,
                       depth: int) -> Optional[Struct]:
    """The structure at `key` of what `call` returns, where the called function (the custom
    function itself or a helper of the module) returns literal tuples, lists or dicts that agree there."""
    target = model.facts.derivative_named(call.func)
    fn = target.primal if target is not None else named_function(model.index, call.func)
    if fn is None or isinstance(fn, (ast.Lambda, ast.AsyncFunctionDef)):
        return None
    found: Optional[Struct] = None
    for _, value in model.facts.returns_of(fn):
        if isinstance(value, (ast.Tuple, ast.List)) and type(key) is int and -len(value.elts) <= key < len(value.elts) \
                and not any(isinstance(e, ast.Starred) for e in value.elts):
            element: Optional[ast.expr] = value.elts[key]
        elif isinstance(value, ast.Dict) and isinstance(key, str):
            element = next((v for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant) and k.value == key), None)
        elif isinstance(key, tuple) and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            element = _field_argument(model, value, key[1])
        else:
            return None
        s = structure(model, target or d, element, fn, {}, depth + 1) if element is not None else None
        if s is None or found is not None and not found.same_as(s):
            return None
        found = s
    return found


def _field_argument(model: "FileModel", call: ast.Call, field: str) -> Optional[ast.expr]:
    """The argument a call of a class of the module (a NamedTuple: annotated fields in its body)
    gives the field `field`, by keyword or position."""
    bindings = model.index.lookup(call.func.id, model.index.scope_of(call))  # type: ignore[attr-defined]
    if len(bindings) != 1 or not isinstance(bindings[0].node, ast.ClassDef):
        return None
    fields = [s.target.id for s in bindings[0].node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    for k in call.keywords:
        if k.arg == field:
            return k.value
    if field in fields and fields.index(field) < len(call.args) and \
            not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[fields.index(field)]
    return None


def _returns_structure(model: "FileModel", d: "CustomDerivative", fn: FunctionNode, depth: int) -> Optional[Struct]:
    found: Optional[Struct] = None
    returns = model.facts.returns_of(fn)
    for _, value in returns:
        s = structure(model, d, value, fn, {}, depth) if value is not None else None
        if s is None or found is not None and not found.same_as(s):
            return None
        found = s
    return found


@query
def through_wrapper(model: "FileModel", fn: FunctionNode) -> FunctionNode:
    """The function a rule only delegates to: `def r(a, b): return _r_impl(a, b)` (or the same
    lambda) passing its own parameters in order to a def or lambda of this module gives `_r_impl`,
    which then receives exactly what JAX passes `r`; `fn` itself otherwise."""
    for _ in range(3):
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
            return fn
        returns = model.facts.returns_of(fn)
        body = fn.body if isinstance(fn, ast.Lambda) else None
        if body is None:
            stmts = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
            if len(stmts) != 1 or len(returns) != 1:
                return fn
            body = returns[0].value
        call = body
        if not isinstance(call, ast.Call) or call.keywords or \
                [a.id if isinstance(a, ast.Name) else None for a in call.args] != params:
            return fn
        target = named_function(model.index, call.func)
        if target is None or target is fn or isinstance(target, ast.AsyncFunctionDef):
            return fn
        target_params = [a.arg for a in target.args.posonlyargs + target.args.args]
        if len(target_params) != len(params) or target.args.vararg:
            return fn
        fn = target
    return fn


# ----------------------------------------------------------------------------- names and order

_TANGENT_AFFIXES = (("", "_dot"), ("", "dot"), ("d", ""), ("d_", ""), ("", "_t"), ("t_", ""), ("", "_tangent"),
                    ("tangent_", ""), ("", "_bar"), ("g", ""), ("", "bar"), ("ct_", ""), ("", "_ct"), ("g_", ""), ("", "_g"),
                    ("grad_", ""), ("", "_grad"), ("", "_cotangent"), ("delta_", ""), ("", "_prime"))


@query(memo=False)
def slot_of(name: str, params: Tuple[str, ...]) -> Optional[str]:
    """The primal parameter a rule's local `name` stands for, by its spelling: the parameter
    itself, or it with a tangent/cotangent affix (`x_dot`, `dx`, `x_bar`, `ct_x`, `g_x`, `gx`, `grad_x`).
    None when no parameter, or more than one, fits."""
    hits = set()
    for p in params:
        if name == p:
            hits.add(p)
            continue
        for pre, post in _TANGENT_AFFIXES:
            if name == f"{pre}{p}{post}" and len(p) >= 1:
                hits.add(p)
    return hits.pop() if len(hits) == 1 else None


_NUMBERED = re.compile(r"(.*?)(\d+)$")


@query(memo=False)
def numbered_twin(name: str, names: Sequence[Optional[str]]) -> Optional[str]:
    """The one name of `names` ending in the same number as `name` with another stem (`t1` for
    `x1`, `dx0` for `a0`): how a jvp rule pairs a tangent with its primal when the names carry no
    affix (jax's `logaddexp`: `x1, x2 = primals`, `t1, t2 = tangents`). None when none or several."""
    own = _NUMBERED.match(name)
    if own is None or not own.group(1):
        return None
    hits = [n for n in names if n and n != name and (m := _NUMBERED.match(n)) is not None
            and m.group(2) == own.group(2) and m.group(1) and m.group(1) != own.group(1)]
    return hits[0] if len(hits) == 1 else None


@query(memo=False)
def permutation(names: List[Optional[str]], expected: Tuple[str, ...]) -> Optional[List[Tuple[int, str, str]]]:
    """Where `names` (each a slot or None) is a reordering of `expected`: (position, got, wanted)
    for every misplaced slot; None when they are in order or the evidence is incomplete (two
    slots at least, all distinct, all among `expected`, at least two misplaced)."""
    if len(names) != len(expected) or len(names) < 2:
        return None
    if any(n is None for n in names) or len(set(names)) != len(names):
        return None
    wrong = [(i, n, expected[i]) for i, n in enumerate(names) if n != expected[i]]  # type: ignore[misc]
    return wrong if len(wrong) >= 2 else None


@dataclass(frozen=True)
class MisorderedUnpacking:
    """A jvp rule's `a, b = primals` (or `= tangents`) whose names are a reordering of the
    function's differentiable parameters (VJP334 reports it; VJP342 leaves that line to it)."""

    source: str  # the parameter unpacked
    what: str  # "primals" or "tangents"
    node: ast.Assign
    names: Tuple[Optional[str], ...]
    wrong: Tuple[Tuple[int, str, str], ...]  # (position, got, wanted), as `permutation` gives


@query
def misordered_jvp_unpackings(model: "FileModel", d: "CustomDerivative", fn: FunctionNode, primals: str,
                              tangents: str) -> Tuple[MisorderedUnpacking, ...]:
    """The unpackings of `primals` and `tangents` in the jvp rule `fn` whose names (or numbered
    twins of the primals' names, `x1, x2` then `t2, t1`) reorder `d`'s differentiable parameters.
    A primals unpacking is left out when every misplaced name is unused or read only for its
    shape or dtype: equal shapes, which the finding assumes, make the swap harmless."""
    contract = model.facts.contract_of(d)
    if contract is None:
        return ()
    found: List[MisorderedUnpacking] = []
    primal_names: Optional[List[Optional[str]]] = None
    for source, what in ((primals, "primals"), (tangents, "tangents")):
        node = next(iter(model.facts.unpackings(fn).get(source, ())), None)
        if node is None:
            continue
        names = [e.id if isinstance(e, ast.Name) else None for e in node.targets[0].elts]  # type: ignore[attr-defined]
        slots = [contract_slot(n, contract) if n else None for n in names]
        if what == "primals":
            primal_names = names
        elif None in slots and primal_names is not None:  # `x1, x2 = primals`, then `t2, t1 = tangents`
            twins = [numbered_twin(n, primal_names) if n and s is None else None for n, s in zip(names, slots)]
            slots = [s or (contract_slot(t, contract) if t else None) for s, t in zip(slots, twins)]
        wrong = permutation(slots, contract.diff_names)
        if wrong and what == "primals" and all(_shape_only(model, fn, names[i]) for i, _, _ in wrong):
            continue
        if wrong:
            found.append(MisorderedUnpacking(source, what, node, tuple(names), tuple(wrong)))
    return tuple(found)


def _shape_only(model: "FileModel", fn: FunctionNode, name: Optional[str]) -> bool:
    """`name` is never read in `fn`, or read only as `name.shape`/`.dtype`/`.ndim`/`.size`."""
    for node in model.facts.own_nodes(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            parent = model.index.parent(node)
            if not (isinstance(parent, ast.Attribute) and parent.attr in ("shape", "dtype", "ndim", "size")):
                return False
    return True


# ----------------------------------------------------------------------------- names by flow

def slot_aliases(model: "FileModel", d: "CustomDerivative", params: Tuple[str, ...],
                 diff: Tuple[str, ...]) -> Tuple[Tuple[str, str], ...]:
    """The names `d`'s rules give the value of each differentiable parameter, read from how the
    values flow rather than from the parameters' own spelling (which may say nothing: `a0`, `a1`):
    - a rule calling the primal with its own names, `f(x, y)`: `x` holds the first parameter's
      value, `y` the second's (what JAX checks a jvp rule's primal output against);
    - fwd saving its parameters as residuals, `return out, (a0, a1, p)`, and bwd unpacking them,
      `q, k, p = res`: `q` holds the first parameter's value, `k` the second's.
    A name given two parameters, or that is itself one of the primal's parameters, is left out."""
    found: Dict[str, Set[str]] = {}
    for role, rule in model.facts.rules_of(d):
        fn = rule.node
        if fn is None:
            continue
        for call in model.facts.calls_in(fn):
            if call.keywords or len(call.args) != len(params) or \
                    any(isinstance(a, ast.Starred) for a in call.args) or model.facts.derivative_named(call.func) is not d:
                continue
            for param, arg in zip(params, call.args):
                if isinstance(arg, ast.Name) and param in diff:
                    found.setdefault(arg.id, set()).add(param)
    for name, param in _residual_names(model, d, params):
        if param in diff:
            found.setdefault(name, set()).add(param)
    return tuple(sorted((name, next(iter(ps))) for name, ps in found.items()
                        if len(ps) == 1 and name not in params))


@query
def saved_parameters(model: "FileModel", d: "CustomDerivative", params: Tuple[str, ...]) -> Tuple[Tuple[str, str], ...]:
    """(bwd's name, primal parameter) for each parameter fwd saves as a residual and bwd unpacks,
    the names the primal's own parameters have included (`q, k, v = res`)."""
    return tuple(_residual_names(model, d, params))


def _residual_names(model: "FileModel", d: "CustomDerivative", params: Tuple[str, ...]) -> List[Tuple[str, str]]:
    """(bwd's name, primal parameter) for residuals fwd saves as its own parameters and bwd unpacks."""
    fwd, bwd = d.rule("fwd"), d.rule("bwd")
    if fwd is None or bwd is None or fwd.node is None or bwd.node is None or isinstance(bwd.node, ast.Lambda):
        return []
    fwd_params = [a.arg for a in fwd.node.args.posonlyargs + fwd.node.args.args][fwd.bound_positional:]
    bwd_params = [a.arg for a in bwd.node.args.posonlyargs + bwd.node.args.args][bwd.bound_positional:]
    if len(fwd_params) != len(params) or len(bwd_params) != len(d.nondiff) + 2:
        return []
    saved: Optional[List[Optional[str]]] = None
    whole = False  # fwd saves one of its parameters as the residuals themselves: `return out, a1`
    fwd_scope = model.index.scopes.get(fwd.node)
    for _, value in model.facts.returns_of(fwd.node):
        res = value.elts[1] if isinstance(value, ast.Tuple) and len(value.elts) == 2 else None
        bound = fwd_scope.bindings.get(res.id, []) if isinstance(res, ast.Name) and fwd_scope is not None else []
        if len(bound) == 1 and bound[0].kind == "assign" and isinstance(bound[0].value, (ast.Tuple, ast.List)):
            res = bound[0].value  # `residuals = (x, w, p)`, then `return out, residuals`
        if isinstance(res, ast.Name) and res.id in fwd_params:
            entries, one = [params[fwd_params.index(res.id)]], True
        elif isinstance(res, (ast.Tuple, ast.List)):
            entries, one = [params[fwd_params.index(e.id)] if isinstance(e, ast.Name) and e.id in fwd_params
                            else None for e in res.elts], False
        else:
            return []
        if saved is not None and (saved != entries or whole != one):
            return []
        saved, whole = entries, one
    if not saved:
        return []
    residuals = bwd_params[len(d.nondiff)]
    out: List[Tuple[str, str]] = []
    if whole:  # bwd names the residuals once: `scale = res`
        return [(node.targets[0].id, saved[0]) for node in model.facts.walk(bwd.node)  # type: ignore[union-attr]
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Name) and node.value.id == residuals and saved[0] is not None]
    for node in model.facts.unpackings(bwd.node).get(residuals, ()):
        if len(node.targets[0].elts) == len(saved):  # type: ignore[attr-defined]
            out.extend((t.id, p) for t, p in zip(node.targets[0].elts, saved) if isinstance(t, ast.Name) and p is not None)
    return out


@query(memo=False)
def contract_slot(name: str, contract: Contract) -> Optional[str]:
    """`slot_of` over the primal's differentiable parameters, then over the names the rules give
    their values (`Contract.aliases`): `x_dot` names the first parameter of `f(a0, a1)` when a
    rule calls `f(x, y)`. None when neither, or more than one parameter, fits."""
    direct = slot_of(name, contract.diff_names)
    if direct is not None or not contract.aliases:
        return direct
    by_alias = dict(contract.aliases)
    hit = slot_of(name, tuple(by_alias))
    return by_alias[hit] if hit is not None else None


@query
def residuals_from_cotangent(model: "FileModel", d: "CustomDerivative", bwd: "RuleFunction") -> Optional[ast.Assign]:
    """Where bwd unpacks, from the parameter JAX passes the output cotangent, exactly the residuals
    fwd saves: fwd returns `out, (r1, ..., rk)` (k >= 2) on every path, the primal's output is not
    shown to be a tuple or list (whose cotangent bwd could unpack), bwd unpacks its last parameter into k names and never
    unpacks or indexes the parameter JAX passes the residuals. The use, not the names, says the
    two parameters are swapped; None otherwise."""
    fwd = d.rule("fwd")
    fn = bwd.node
    if fwd is None or fwd.node is None or fn is None or isinstance(fn, ast.Lambda) or fn.args.vararg:
        return None
    out = model.facts.primal_output(d)
    if out is not None and out.kind != ARRAY or d.nondiff_unresolved:
        return None  # a primal returning a tuple gets a tuple of cotangents, which bwd may unpack
    lengths = set()
    for _, value in model.facts.returns_of(fwd.node):
        res = value.elts[1] if isinstance(value, ast.Tuple) and len(value.elts) == 2 else None
        if not isinstance(res, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in res.elts):
            return None
        lengths.add(len(res.elts))
    if len(lengths) != 1 or min(lengths) < 2:
        return None
    k = lengths.pop()
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args][bwd.bound_positional:]
    nd = len(d.nondiff)
    if len(params) - len(fn.args.defaults) != nd + 2:
        return None
    residuals, cotangent = params[nd], params[nd + 1]
    found: Optional[ast.Assign] = None
    for node in model.facts.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == residuals:
            return None
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and \
                any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            if node.value.id == residuals:
                return None
            target = node.targets[0]
            if node.value.id == cotangent and len(node.targets) == 1 and isinstance(target, (ast.Tuple, ast.List)) \
                    and len(target.elts) == k and not any(isinstance(e, ast.Starred) for e in target.elts):
                found = node
    return found


def _taken_from(model: "FileModel", fn: FunctionNode, param: str) -> Set[str]:
    """`param` and the names `fn` unpacks from it (`x, y = param`)."""
    names = {param}
    for node in model.facts.unpackings(fn).get(param, ()):
        names.update(e.id for e in node.targets[0].elts if isinstance(e, ast.Name))  # type: ignore[attr-defined]
    return names


@query
def primal_call_from_tangents(model: "FileModel", d: "CustomDerivative", fn: FunctionNode, primals: str,
                              tangents: str) -> Optional[ast.Call]:
    """A jvp rule's call of its own primal that takes its arguments from the parameter JAX passes
    the tangents (`x, y = tangents; f(x, y)`, `f(*tangents)`) while no call of the primal takes
    anything from the parameter JAX passes the primals: the rule computes the primal output from
    the tangents, so its two parameters are used the other way round. None otherwise."""
    from_t, from_p = _taken_from(model, fn, tangents), _taken_from(model, fn, primals)
    if from_t & from_p:
        return None
    hit: Optional[ast.Call] = None
    for call in model.facts.calls_in(fn):
        if model.facts.derivative_named(call.func) is not d:
            continue
        used = {n.id for a in [*call.args, *(k.value for k in call.keywords)] for n in walk(a)
                if isinstance(n, ast.Name)}
        if used & from_p:
            return None
        if used & from_t and hit is None:
            hit = call
    return hit


@query
def ignores_first(model: "FileModel", fn: FunctionNode, first: str, second: str) -> bool:
    """A defjvps rule (called `(g, ans, *primals)`) whose results never read its first parameter,
    the input tangent, but read its second: its tangent output cannot be linear in the tangent
    (a zero result, `jnp.zeros_like(x)` or `0.0`, is a zero derivative and is not counted)."""
    loads = {n.id for n in model.facts.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if first in loads or second not in loads or first == second:
        return False
    returns = model.facts.returns_of(fn)
    return bool(returns) and all(v is not None and not zero_cotangent(model, v) for _, v in returns)


@query
def output_cotangent_names(model: "FileModel", d: "CustomDerivative", contract: Contract, rule: "RuleFunction",
                           fn: ast.AST) -> Dict[str, str]:
    """{name: parameter} for bwd's output cotangent (its last parameter, by position, or a name
    bound once to it) when the primal returns a differentiable parameter as is: the cotangent
    then has that parameter's shape, whatever the names say."""
    if fn is not rule.node or rule.bound_keywords or d.primal is None or isinstance(fn, ast.Lambda):
        return {}
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args][rule.bound_positional:]  # type: ignore[union-attr]
    if fn.args.vararg or len(params) != len(contract.nondiff) + 2:  # type: ignore[union-attr]
        return {}
    outs = {r.value.id if isinstance(r.value, ast.Name) else None for r in model.facts.returns_of(d.primal)}
    if len(outs) != 1 or next(iter(outs)) not in contract.diff_names:
        return {}
    out, cotangent = next(iter(outs)), params[-1]
    names = {cotangent: out}
    nodes = model.facts.walk(fn)
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.Name) and node.value.id == cotangent:
            names[node.targets[0].id] = out
    assigned = [t.id for n in nodes if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                for t in walk(n.targets[0] if isinstance(n, ast.Assign) else n.target) if isinstance(t, ast.Name)]
    return {k: v for k, v in names.items() if assigned.count(k) == (0 if k == cotangent else 1)}
