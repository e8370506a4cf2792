"""Mutation and spelling operators over the correct definitions in `bases/`.

    python eval/mutation/mutate.py            # regenerate cases/ (mutants) and manifest.json
    python eval/mutation/mutate.py --check    # exit 1 when a mutant or the manifest is missing or stale; writes nothing

A regeneration replaces the mutants and the manifest only: the usage tests beside the mutants
(`test_usage_*.py`, written by usage_tests.py) are left as they are (`usage_tests.py --check`
says which are stale).

A *mutation operator* makes one realistic edit to a correct custom_vjp/custom_jvp definition
(a cotangent order, a rule parameter, a registration, nondiff_argnums, ...). Whether the edit is
a hazard is not decided here: `label.py` runs every mutant on JAX, and a mutant JAX accepts stays
as a look-alike. A *spelling operator* rewrites a definition into a form JAX treats the same
(decorator and call form, `def` and `lambda`, a helper, a `staticmethod`, keyword nondiff,
`functools.partial`, neutral parameter names); `tests/unit/test_mutation_spellings.py` asserts that
vjplint's findings do not depend on the spelling.

Operators work on the `ast` of a module and write it back with `ast.unparse` (comments are
lost; a base's docstring, which records its source, is kept). Each returns the new source, or
None when it does not apply to that base.
"""

from __future__ import annotations

import ast
import copy
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

HERE = Path(__file__).resolve().parent
BASES = HERE / "bases"
HELD_OUT = HERE / "heldout"  # bases kept out of rule work: measured on, never tuned on
# The held-out sets, in the order they were written (heldout2: 2026-12-06; heldout3: 2026-12-07, written
# blind to vjplint's rules, with operators of its own that apply to it alone: `ONLY_SETS`; heldout4: 2026-12-07,
# written blind, with operators of its own, heldout3's applying to it too; heldout5: 2026-12-07, written blind,
# with operators of its own, heldout3's and heldout4's applying to it too; heldout6: 2026-12-07, written blind,
# with operators of its own, heldout3's, heldout4's and heldout5's applying to it too; heldout7, heldout8, heldout9 and
# heldout10: 2026-12-07, written blind, with operators of its own, the older ones applying to a sample of their pairs;
# heldout11: 2026-12-08, likewise). Each is
# numbered apart (its own every-third sample), so that a new set leaves every earlier set's mutants
# as they are.
HELD_OUT_SETS = (HELD_OUT, HERE / "heldout2", HERE / "heldout3", HERE / "heldout4", HERE / "heldout5", HERE / "heldout6", HERE / "heldout7",
                 HERE / "heldout8", HERE / "heldout9", HERE / "heldout10", HERE / "heldout11")
CASES = HERE / "cases"
MANIFEST = HERE / "manifest.json"

Fn = Union[ast.FunctionDef, ast.Lambda]
CREATORS = {"custom_vjp": "vjp", "custom_jvp": "jvp"}
PARTIALS = {"partial", "functools.partial", "ft.partial"}
SPAN = "  # eval: span"


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def creator_kind(node: ast.AST) -> Optional[str]:
    name = dotted(node).rsplit(".", 1)[-1]
    return CREATORS.get(name) if dotted(node) else None


class UnreadableNondiff(ValueError):
    """A `nondiff_argnums`/`nondiff_argnames` that is not a literal."""


@dataclass
class Deriv:
    kind: str                      # "vjp" or "jvp"
    name: str                      # the name bound to the custom function
    primal: Fn
    creator: ast.expr              # the decorator or the `jax.custom_vjp(...)` call
    creator_style: str             # "decorator" or "call"
    creator_stmt: Optional[ast.Assign]
    keywords: List[ast.keyword]    # of the creator (nondiff_argnums, ...)
    registration: ast.Call         # `.defvjp(...)`, `.defjvp(...)`, `.defjvps(...)` call
    reg_stmt: Optional[ast.Expr]   # the statement when registered by a call
    reg_decorated: Optional[ast.FunctionDef]  # the rule when registered by a decorator
    method: str                    # defvjp / defjvp / defjvps
    rules: Dict[str, Fn] = field(default_factory=dict)  # fwd, bwd, jvp
    defjvps: List[Optional[Fn]] = field(default_factory=list)

    @property
    def params(self) -> List[str]:
        return [a.arg for a in self.primal.args.args]

    @property
    def nondiff(self) -> Tuple[int, ...]:
        """The nondiff positions; `UnreadableNondiff` when they are computed (`tuple(range(1, n))`, a
        module constant): no operator can tell which arguments are differentiable, so none applies."""
        for kw in self.keywords:
            if kw.arg in ("nondiff_argnums", "nondiff_argnames"):
                try:
                    value = ast.literal_eval(kw.value)
                except ValueError:
                    raise UnreadableNondiff(ast.unparse(kw.value)) from None
                value = value if isinstance(value, (tuple, list)) else (value,)
                if kw.arg == "nondiff_argnums":
                    return tuple(value)
                return tuple(sorted(self.params.index(n) for n in value))
        return ()

    @property
    def diff_positions(self) -> List[int]:
        return [i for i in range(len(self.params)) if i not in self.nondiff]


def _parents(tree: ast.AST) -> Dict[ast.AST, ast.AST]:
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def _functions(tree: ast.AST) -> Dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def _reg_method(call: ast.AST) -> Optional[Tuple[str, str]]:
    """(custom function name, method) for `NAME.defvjp` / `NAME.defjvp` / `NAME.defjvps`."""
    if isinstance(call, ast.Attribute) and call.attr in ("defvjp", "defjvp", "defjvps") and isinstance(call.value, ast.Name):
        return call.value.id, call.attr
    return None


def find(tree: ast.Module) -> Deriv:
    """The module's one custom derivative."""
    funcs = _functions(tree)
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                kind = creator_kind(dec)
                kws: List[ast.keyword] = []
                if kind is None and isinstance(dec, ast.Call) and dotted(dec.func) in PARTIALS and dec.args:
                    kind = creator_kind(dec.args[0])
                    kws = dec.keywords
                if kind:
                    found = (kind, node.name, node, dec, "decorator", None, kws)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
            kind = creator_kind(node.value.func)
            if kind and isinstance(node.targets[0], ast.Name) and node.value.args:
                target = node.value.args[0]
                primal = funcs.get(target.id) if isinstance(target, ast.Name) else target
                if isinstance(primal, (ast.FunctionDef, ast.Lambda)):
                    found = (kind, node.targets[0].id, primal, node.value, "call", node, node.value.keywords)
    if found is None:
        raise ValueError("no custom derivative")
    kind, name, primal, creator, style, stmt, kws = found
    reg = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            rm = _reg_method(node.value.func)
            if rm and rm[0] == name:
                reg = (node.value, node, None, rm[1])
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.args[0] if isinstance(dec, ast.Call) and dotted(dec.func) in PARTIALS and dec.args else dec
                rm = _reg_method(target)
                if rm and rm[0] == name:
                    call = ast.Call(func=target, args=[ast.Name(node.name, ast.Load())],
                                    keywords=list(dec.keywords) if isinstance(dec, ast.Call) else [])
                    reg = (call, None, node, rm[1])
    if reg is None:
        raise ValueError("no registration")
    call, reg_stmt, reg_dec, method = reg
    d = Deriv(kind, name, primal, creator, style, stmt, list(kws), call, reg_stmt, reg_dec, method)

    def resolve(arg: ast.expr) -> Optional[Fn]:
        if isinstance(arg, ast.Lambda):
            return arg
        if isinstance(arg, ast.Name):
            return funcs.get(arg.id)
        return None

    if reg_dec is not None:
        d.rules["jvp"] = reg_dec
    elif method == "defvjp":
        d.rules["fwd"], d.rules["bwd"] = resolve(call.args[0]), resolve(call.args[1])
    elif method == "defjvp":
        d.rules["jvp"] = resolve(call.args[0])
    else:
        d.defjvps = [resolve(a) for a in call.args]
    return d


# ----------------------------------------------------------------------------- helpers


def returns(fn: Optional[Fn]) -> List[ast.expr]:
    if fn is None:
        return []
    if isinstance(fn, ast.Lambda):
        return [fn.body]
    out: List[ast.expr] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return) and child.value is not None:
                out.append(child.value)
            visit(child)

    visit(fn)
    return out


def replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return
    raise ValueError("node not found")


def body_of(tree: ast.AST, stmt: ast.stmt) -> Tuple[List[ast.stmt], int]:
    for parent in ast.walk(tree):
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list) and any(s is stmt for s in value):
                return value, next(i for i, s in enumerate(value) if s is stmt)
    raise ValueError("statement not found")


def param_names(fn: Fn) -> List[str]:
    return [a.arg for a in fn.args.args]


def set_params(fn: Fn, names: Sequence[str]) -> None:
    fn.args.args = [ast.arg(n) for n in names]
    fn.args.defaults = []


def unpacking(fn: Fn, source_name: str) -> Optional[ast.Assign]:
    """`a, b = source_name` (a tuple or list target) in a rule's body."""
    if isinstance(fn, ast.Lambda):
        return None
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List))
                and isinstance(node.value, ast.Name) and node.value.id == source_name):
            return node
    return None


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def stmt(text: str) -> List[ast.stmt]:
    return ast.parse(text).body


def tuple_returns(fn: Optional[Fn]) -> List[ast.expr]:
    return [r for r in returns(fn) if isinstance(r, (ast.Tuple, ast.List))]


def is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def jvp_rule(d: Deriv) -> Optional[Fn]:
    return d.rules.get("jvp")


def set_nondiff(d: Deriv, positions: Sequence[int], tree: ast.Module) -> None:
    """Rewrite the creator's nondiff_argnums (dropping it when empty)."""
    kws = [k for k in d.keywords if k.arg not in ("nondiff_argnums", "nondiff_argnames")]
    if positions:
        kws.append(ast.keyword("nondiff_argnums", expr(repr(tuple(positions)))))
    if d.creator_style == "call":
        d.creator.keywords = kws
        return
    kind = "jax.custom_vjp" if d.kind == "vjp" else "jax.custom_jvp"
    new = expr(kind) if not kws else ast.Call(func=expr("functools.partial"), args=[expr(kind)], keywords=kws)
    d.primal.decorator_list = [new if dec is d.creator else dec for dec in d.primal.decorator_list]


# ----------------------------------------------------------------------------- mutation operators

Op = Callable[[ast.Module, Deriv, Dict], Optional[str]]
MUTATIONS: Dict[str, Tuple[str, Op]] = {}


def mutation(name: str, doc: str) -> Callable[[Op], Op]:
    def deco(fn: Op) -> Op:
        MUTATIONS[name] = (doc, fn)
        return fn
    return deco


@mutation("bwd_bare", "bwd returns its one cotangent as a bare value instead of a 1-tuple")
def _bwd_bare(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if len(r.elts) == 1:
            replace(tree, r, r.elts[0])
            done = True
    return "bwd" if done else None


@mutation("bwd_none_for_diff", "bwd returns None for a differentiated input")
def _bwd_none(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    diff = d.diff_positions
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        for i, e in enumerate(r.elts):
            if i < len(diff) and diff[i] in meta.get("argnums", ()) and not is_none(e):
                r.elts[i] = ast.Constant(None)
                done = True
                break
    return "bwd" if done else None


@mutation("ct_order", "bwd returns two cotangents in the wrong order")
def _ct_order(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        idx = [i for i, e in enumerate(r.elts) if not is_none(e)]
        if len(idx) >= 2:
            i, j = idx[0], idx[1]
            r.elts[i], r.elts[j] = r.elts[j], r.elts[i]
            done = True
    return "bwd" if done else None


@mutation("bwd_drop_ct", "bwd returns one cotangent fewer than there are differentiable inputs")
def _bwd_drop(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if len(r.elts) >= 2:
            r.elts.pop()
            done = True
    return "bwd" if done else None


@mutation("fwd_no_residual", "fwd returns the primal output alone, without residuals")
def _fwd_no_res(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("fwd")):
        if len(r.elts) == 2:
            replace(tree, r, r.elts[0])
            done = True
    return "fwd" if done else None


@mutation("bwd_params_swapped", "bwd takes (cotangent, residuals) instead of (residuals, cotangent)")
def _bwd_swapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    if bwd is None or len(param_names(bwd)) < 2 or bwd.args.vararg:
        return None
    names = param_names(bwd)
    names[-1], names[-2] = names[-2], names[-1]
    set_params(bwd, names)
    return "bwd"


@mutation("jvp_params_swapped", "jvp rule takes (tangents, primals); defjvps lambdas take (ans, g)")
def _jvp_swapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    if rule is not None and len(param_names(rule)) >= 2:
        names = param_names(rule)
        names[-1], names[-2] = names[-2], names[-1]
        set_params(rule, names)
        return "jvp"
    done = False
    for lam in d.defjvps:
        if lam is not None and len(param_names(lam)) >= 2:
            names = param_names(lam)
            names[0], names[1] = names[1], names[0]
            set_params(lam, names)
            done = True
    return "defjvps" if done else None


def _swap_unpack(d: Deriv, which: int) -> Optional[str]:
    rule = jvp_rule(d)
    if rule is None or len(param_names(rule)) < 2:
        return None
    source = param_names(rule)[-2 + which]
    node = unpacking(rule, source)
    if node is None or len(node.targets[0].elts) < 2:
        return None
    elts = node.targets[0].elts
    elts[0], elts[1] = elts[1], elts[0]
    return "jvp"


@mutation("primal_order", "jvp rule unpacks the primals in a different order than the primal's parameters")
def _primal_order(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _swap_unpack(d, 0)


@mutation("tangent_order", "jvp rule unpacks the tangents in a different order than the primal's parameters")
def _tangent_order(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _swap_unpack(d, 1)


@mutation("jvp_tangent_structure", "jvp rule returns a tangent whose structure differs from the primal output's")
def _jvp_structure(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    done = False
    if rule is not None:
        for r in tuple_returns(rule):
            if len(r.elts) == 2:
                r.elts[1] = ast.Tuple([r.elts[1]], ast.Load())
                done = True
        return "jvp" if done else None
    for lam in d.defjvps:
        if isinstance(lam, ast.Lambda):
            lam.body = ast.Tuple([lam.body], ast.Load())
            done = True
    return "defjvps" if done else None


@mutation("jvp_missing_nondiff", "jvp rule leaves out the nondiff parameters")
def _jvp_missing_nondiff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    n = len(d.nondiff)
    if rule is None or not n or len(param_names(rule)) != n + 2:
        return None
    set_params(rule, param_names(rule)[n:])
    return "jvp"


@mutation("nonlinear_tangent", "the tangent output is not linear in the input tangents (one tangent squared)")
def _nonlinear(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    names: List[str] = []
    target: Optional[Fn] = None
    if rule is not None and len(param_names(rule)) >= 2:
        tangents = param_names(rule)[-1]
        node = unpacking(rule, tangents)
        if node is not None:
            names = [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
        else:
            for n in ast.walk(rule):
                if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Subscript) and isinstance(n.value.value, ast.Name)
                        and n.value.value.id == tangents and isinstance(n.targets[0], ast.Name)):
                    names.append(n.targets[0].id)
        target = rule
    elif d.defjvps and isinstance(d.defjvps[0], ast.Lambda):
        target = d.defjvps[0]
        names = param_names(target)[:1]
    if target is None or not names:
        return None
    skip = set()
    if rule is not None:  # not the unpacking of the tangents itself
        for n in ast.walk(rule):
            if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Subscript)):
                skip.update(id(x) for x in ast.walk(n.value))
    body = target.body if isinstance(target, ast.Lambda) else target
    for n in ast.walk(body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names and id(n) not in skip:
            replace(tree, n, ast.BinOp(ast.Name(n.id, ast.Load()), ast.Mult(), ast.Name(n.id, ast.Load())))
            return "jvp" if rule is not None else "defjvps"
    return None


@mutation("nondiff_move", "a differentiated array argument moved into nondiff_argnums (rules adjusted as a user would)")
def _nondiff_move(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = [p for p in meta.get("argnums", ()) if p in d.diff_positions]
    if not argnums or d.method == "defjvps" or isinstance(d.primal, ast.Lambda):
        return None
    p = argnums[-1]
    diff_index = d.diff_positions.index(p)
    new_nondiff = sorted(d.nondiff + (p,))
    at = new_nondiff.index(p)
    pname = d.params[p]
    if d.kind == "vjp":
        bwd = d.rules.get("bwd")
        rets = tuple_returns(bwd)
        if bwd is None or not rets or any(len(r.elts) != len(d.diff_positions) for r in rets):
            return None
        names = param_names(bwd)
        if bwd.args.vararg:
            return None
        names.insert(at, pname if pname not in names else pname + "_nd")
        set_params(bwd, names)
        for r in rets:
            r.elts.pop(diff_index)
    else:
        rule = jvp_rule(d)
        if rule is None or len(param_names(rule)) < 2:
            return None
        names = param_names(rule)
        ups = [unpacking(rule, names[-2]), unpacking(rule, names[-1])]
        if any(u is None or len(u.targets[0].elts) != len(d.diff_positions) for u in ups):
            return None
        dropped = ups[1].targets[0].elts[diff_index]
        primal_name = ups[0].targets[0].elts[diff_index]
        # the rule's own name for the moved argument (`M, e = primals` for a primal's `ecc`) becomes its
        # parameter, as a user would write it; the rule's body reads that name
        if isinstance(primal_name, ast.Name) and primal_name.id != pname and primal_name.id not in names:
            pname = primal_name.id
        for u in ups:
            u.targets[0].elts.pop(diff_index)
        if isinstance(dropped, ast.Name):  # the moved argument's tangent is zero now, as a user would write
            body, i = body_of(tree, ups[1])
            body.insert(i + 1, stmt(f"{dropped.id} = jnp.zeros_like({pname})")[0])
        names.insert(at, pname if pname not in names else pname + "_nd")
        set_params(rule, names)
    set_nondiff(d, new_nondiff, tree)
    return "creator"


@mutation("nondiff_shift", "nondiff_argnums off by one (the rules unchanged)")
def _nondiff_shift(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    nd = d.nondiff
    if not nd:
        return None
    n = len(d.params)
    shifted = tuple(i + 1 for i in nd) if max(nd) + 1 < n else tuple(i - 1 for i in nd)
    if min(shifted) < 0:
        return None
    set_nondiff(d, shifted, tree)
    return "creator"


@mutation("static_to_traced", "nondiff_argnums removed: a static Python value now goes through a traced slot")
def _static_to_traced(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    nd = d.nondiff
    if not nd:
        return None
    k = len(nd)
    if d.kind == "vjp":
        bwd = d.rules.get("bwd")
        rets = tuple_returns(bwd)
        if bwd is None or not rets or bwd.args.vararg:
            return None
        removed = set(param_names(bwd)[:k])
        if any(isinstance(n, ast.Name) and n.id in removed for n in ast.walk(bwd)):
            return None  # the bwd reads the value: the user would have to restructure it, not one edit
        set_params(bwd, param_names(bwd)[k:])
        for r in rets:
            for p in nd:
                r.elts.insert(p, ast.Constant(None))
    else:
        rule = jvp_rule(d)
        if rule is None or len(param_names(rule)) != k + 2:
            return None
        names = param_names(rule)
        ups = [unpacking(rule, names[-2]), unpacking(rule, names[-1])]
        if any(u is None for u in ups):
            return None
        for j, p in enumerate(nd):
            ups[0].targets[0].elts.insert(p, ast.Name(names[j], ast.Store()))
            ups[1].targets[0].elts.insert(p, ast.Name(f"_{names[j]}_dot", ast.Store()))
        set_params(rule, names[k:])
    set_nondiff(d, (), tree)
    return "creator"


@mutation("unregistered", "the rules are defined but never registered")
def _unregistered(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.reg_stmt is not None:
        body, i = body_of(tree, d.reg_stmt)
        body[i] = ast.Pass()
    else:
        d.reg_decorated.decorator_list = []
    return "registration"


@mutation("registered_twice", "the registration is made twice")
def _twice(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    anchor = d.reg_stmt or d.reg_decorated
    body, i = body_of(tree, anchor)
    body.insert(i + 1, ast.Expr(copy.deepcopy(d.registration)))
    return "registration"


@mutation("forward_mode", "a caller applies jax.jacfwd to the function")
def _forward(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    tree.body.extend(stmt(
        f"def forward_usage(*args):\n    return jax.jacfwd(eval_fn, argnums={argnums!r})(*args)\n\n"
        "def eval_custom():\n    return {'forward_usage': lambda: (forward_usage(*eval_inputs()), None)[1]}\n"))
    return "caller"


@mutation("direct_linearize", "the module sets the jax_use_direct_linearize flag (a statement JAX ignores)")
def _direct_linearize(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    last_import = max(i for i, s in enumerate(tree.body) if isinstance(s, (ast.Import, ast.ImportFrom)))
    tree.body.insert(last_import + 1, stmt("jax.config.update('jax_use_direct_linearize', True)")[0])
    meta["claim"] = "no-op"
    return "flag"


@mutation("jvptracer_sniff", "the caller tests isinstance(x, JVPTracer) to decide whether it is differentiated")
def _sniff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fns = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "eval_fn"]
    argnums = meta.get("argnums", ())
    if not fns or not argnums:
        return None
    fn = fns[0]
    params = param_names(fn)
    fn.name = "_eval_fn_plain"
    call = f"_eval_fn_plain({', '.join(params)})"
    new = stmt(
        "from jax.interpreters.ad import JVPTracer\n\n"
        f"def eval_fn({', '.join(params)}):\n"
        f"    if isinstance({params[argnums[0]]}, JVPTracer):\n"
        f"        return {call}\n"
        f"    return jax.lax.stop_gradient({call})\n")
    i = tree.body.index(fn)
    tree.body[i + 1:i + 1] = new
    return "caller"


# ----------------------------------------------------------------------------- heldout3 operators
#
# Written for the third held-out set (2026-12-07), from the checks in JAX's own source (each row of
# heldout3/OPERATORS.md names the check). They apply to heldout3's bases only (`ONLY_SETS`), so that
# every earlier set's mutants and manifest entries stay as they were (and, since, to heldout4's and heldout5's).

ONLY_SETS: Dict[str, Tuple[str, ...]] = {}


def heldout3_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11")  # heldout4 ... heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


def _rule_pairs(fn: Optional[Fn]) -> List[ast.Tuple]:
    """The `return a, b` pairs of a rule (fwd: output and residuals; jvp: primal and tangent)."""
    return [r for r in tuple_returns(fn) if isinstance(r, ast.Tuple) and len(r.elts) == 2]


def _creator_names(d: Deriv) -> List[ast.Attribute]:
    """The `custom_vjp` / `custom_jvp` attribute nodes of the creator (decorator, partial or call)."""
    out = []
    for n in ast.walk(d.creator):
        if isinstance(n, ast.Attribute) and n.attr in CREATORS:
            out.append(n)
    return out


def _first_ct(d: Deriv) -> List[Tuple[ast.Tuple, int]]:
    """(bwd return tuple, index of its first non-None cotangent) for every tuple return of bwd."""
    out = []
    for r in tuple_returns(d.rules.get("bwd")):
        idx = [i for i, e in enumerate(r.elts) if not is_none(e)]
        if idx:
            out.append((r, idx[0]))
    return out


def _reg_keyword(tree: ast.Module, d: Deriv, kw: str) -> Optional[str]:
    """Add `kw=True` to the registration (`f.defvjp(fwd, bwd, kw=True)`, `@partial(f.defjvp, kw=True)`)."""
    if any(k.arg == kw for k in d.registration.keywords):
        return None
    if d.reg_stmt is not None:
        d.registration.keywords.append(ast.keyword(kw, ast.Constant(True)))
        return "registration"
    rule = d.reg_decorated
    rule.decorator_list = [ast.Call(func=expr("functools.partial"), args=[d.registration.func],
                                    keywords=list(d.registration.keywords) + [ast.keyword(kw, ast.Constant(True))])]
    return "registration"


@heldout3_mutation("defvjp_swapped", "the registration passes the rules in the wrong order: f.defvjp(bwd, fwd)")
def _defvjp_swapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method != "defvjp" or len(d.registration.args) != 2:
        return None
    a = d.registration.args
    a[0], a[1] = a[1], a[0]
    return "registration"


@heldout3_mutation("creator_swapped", "custom_vjp written where custom_jvp is meant, or the reverse (the rules unchanged)")
def _creator_swapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    names = _creator_names(d)
    if not names:
        return None
    for n in names:
        n.attr = "custom_jvp" if n.attr == "custom_vjp" else "custom_vjp"
    return "creator"


@heldout3_mutation("fwd_flat_residuals", "fwd returns its residuals unpacked beside the output: (out, a, b) instead of (out, (a, b))")
def _fwd_flat(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        res = r.elts[1]
        if isinstance(res, ast.Tuple) and len(res.elts) >= 2:
            r.elts = [r.elts[0]] + list(res.elts)
            done = True
    return "fwd" if done else None


@heldout3_mutation("fwd_primal_wrapped", "fwd returns its output wrapped in a 1-tuple: ((out,), res)")
def _fwd_wrapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        r.elts[0] = ast.Tuple([r.elts[0]], ast.Load())
        done = True
    return "fwd" if done else None


@heldout3_mutation("fwd_primal_bf16", "fwd returns its output in bfloat16 (a mixed-precision fwd), the primal in the input dtype")
def _fwd_bf16(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        r.elts[0] = ast.Call(func=expr("jnp.asarray"), args=[r.elts[0], expr("jnp.bfloat16")], keywords=[])
        done = True
    return "fwd" if done else None


@heldout3_mutation("fwd_list_pair", "fwd returns [out, res], a list (JAX takes a list or a tuple)")
def _fwd_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        replace(tree, r, ast.List(list(r.elts), ast.Load()))
        done = True
    return "fwd" if done else None


@heldout3_mutation("bwd_ct_reduced", "bwd sums a cotangent to a scalar (as for a broadcast parameter) where the input is an array")
def _bwd_reduced(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r, i in _first_ct(d):
        r.elts[i] = ast.Call(func=expr("jnp.sum"), args=[r.elts[i]], keywords=[])
        done = True
    return "bwd" if done else None


@heldout3_mutation("bwd_ct_bf16", "bwd returns a cotangent in bfloat16 (a mixed-precision bwd) for a float32 input")
def _bwd_bf16(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r, i in _first_ct(d):
        r.elts[i] = ast.Call(func=expr("jnp.asarray"), args=[r.elts[i], expr("jnp.bfloat16")], keywords=[])
        done = True
    return "bwd" if done else None


@heldout3_mutation("bwd_list", "bwd returns its cotangents as a list (JAX turns a list of the right length into a tuple)")
def _bwd_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if isinstance(r, ast.Tuple):
            replace(tree, r, ast.List(list(r.elts), ast.Load()))
            done = True
    return "bwd" if done else None


@heldout3_mutation("bwd_ct_for_nondiff", "bwd also returns a None for each nondiff_argnums argument")
def _bwd_ct_nondiff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    nd = d.nondiff
    rets = tuple_returns(d.rules.get("bwd"))
    if not nd or not rets or any(len(r.elts) != len(d.diff_positions) for r in rets):
        return None
    for r in rets:
        for p in nd:
            r.elts.insert(p, ast.Constant(None))
    return "bwd"


@heldout3_mutation("fwd_nondiff_first", "fwd takes the nondiff_argnums arguments first, as bwd does (the primal's order is meant)")
def _fwd_nondiff_first(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd = d.rules.get("fwd")
    nd = d.nondiff
    if fwd is None or not nd or fwd.args.vararg or len(param_names(fwd)) != len(d.params):
        return None
    if nd == tuple(range(len(nd))):
        return None  # already first: the edit changes nothing
    names = param_names(fwd)
    set_params(fwd, [names[i] for i in nd] + [n for i, n in enumerate(names) if i not in nd])
    return "fwd"


@heldout3_mutation("bwd_nondiff_last", "bwd takes the nondiff_argnums arguments after (res, g) instead of before")
def _bwd_nondiff_last(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    k = len(d.nondiff)
    if bwd is None or not k or bwd.args.vararg or len(param_names(bwd)) != k + 2:
        return None
    names = param_names(bwd)
    set_params(bwd, names[k:] + names[:k])
    return "bwd"


@heldout3_mutation("symbolic_zeros_added", "the registration adds symbolic_zeros=True, the rules unchanged")
def _symbolic_zeros(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method not in ("defvjp", "defjvp"):
        return None
    return _reg_keyword(tree, d, "symbolic_zeros")


@heldout3_mutation("optimize_remat", "defvjp adds optimize_remat=True")
def _optimize_remat(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method != "defvjp":
        return None
    return _reg_keyword(tree, d, "optimize_remat")


@heldout3_mutation("jvp_not_pair", "the jvp rule returns the tangent alone, not (primal_out, tangent_out)")
def _jvp_not_pair(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        replace(tree, r, r.elts[1])
        done = True
    return "jvp" if done else None


@heldout3_mutation("jvp_primal_wrapped", "the jvp rule wraps its primal output in a 1-tuple, the tangent left bare")
def _jvp_primal_wrapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        r.elts[0] = ast.Tuple([r.elts[0]], ast.Load())
        done = True
    return "jvp" if done else None


@heldout3_mutation("jvp_pair_wrapped", "the jvp rule wraps both its primal and tangent outputs in 1-tuples")
def _jvp_pair_wrapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        r.elts = [ast.Tuple([e], ast.Load()) for e in r.elts]
        done = True
    return "jvp" if done else None


@heldout3_mutation("jvp_primal_bf16", "the jvp rule returns its primal output in bfloat16, the tangent in float32")
def _jvp_primal_bf16(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        if isinstance(r.elts[0], ast.Tuple):
            continue
        r.elts[0] = ast.Call(func=expr("jnp.asarray"), args=[r.elts[0], expr("jnp.bfloat16")], keywords=[])
        done = True
    return "jvp" if done else None


@heldout3_mutation("jvp_tangent_reduced", "the jvp rule sums its tangent output to a scalar")
def _jvp_tangent_reduced(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        t = r.elts[1]
        if isinstance(t, ast.Tuple):
            t.elts[0] = ast.Call(func=expr("jnp.sum"), args=[t.elts[0]], keywords=[])
        else:
            r.elts[1] = ast.Call(func=expr("jnp.sum"), args=[t], keywords=[])
        done = True
    return "jvp" if done else None


@heldout3_mutation("jvp_list_pair", "the jvp rule returns [primal_out, tangent_out], a list (JAX takes a list or a tuple)")
def _jvp_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        replace(tree, r, ast.List(list(r.elts), ast.Load()))
        done = True
    return "jvp" if done else None


@heldout3_mutation("defjvps_nondiff", "a defjvps function gets nondiff_argnums for its last argument (its defjvps entry dropped)")
def _defjvps_nondiff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method != "defjvps" or len(d.params) < 2 or len(d.registration.args) != len(d.params):
        return None
    last = len(d.params) - 1
    d.registration.args.pop()
    set_nondiff(d, (last,), tree)
    return "creator"


def _eval_fn(tree: ast.Module) -> Optional[ast.FunctionDef]:
    return next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "eval_fn"), None)


@heldout3_mutation("keyword_call", "the caller passes the custom function's last argument by keyword")
def _keyword_call(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fn = _eval_fn(tree)
    if fn is None or isinstance(d.primal, ast.Lambda) or d.primal.args.vararg:
        return None
    params = d.params
    done = False
    for n in ast.walk(fn):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == d.name and not n.keywords
                and len(n.args) == len(params) and len(params) >= 2 and not isinstance(n.args[-1], ast.Starred)):
            n.keywords = [ast.keyword(params[-1], n.args.pop())]
            done = True
    return "caller" if done else None


@heldout3_mutation("hessian_caller", "a caller takes jax.hessian of the summed function (second order)")
def _hessian(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    tree.body.extend(stmt(
        "def hessian_usage(*args):\n"
        f"    return jax.hessian(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums[0]!r})(*args)\n\n"
        "def eval_custom():\n    return {'hessian_usage': lambda: (hessian_usage(*eval_inputs()), None)[1]}\n"))
    return "caller"


@heldout3_mutation("residual_side_channel", "fwd keeps its residuals in a module-level dict and returns None; bwd reads them from there")
def _side_channel(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd, bwd = d.rules.get("fwd"), d.rules.get("bwd")
    if not isinstance(fwd, ast.FunctionDef) or not isinstance(bwd, ast.FunctionDef) or bwd.args.vararg:
        return None
    k = len(d.nondiff)
    names = param_names(bwd)
    if len(names) != k + 2:
        return None
    pairs = _rule_pairs(fwd)
    if not pairs:
        return None
    for r in pairs:
        ret = next(s for s in ast.walk(fwd) if isinstance(s, ast.Return) and s.value is r)
        body, i = body_of(tree, ret)
        body.insert(i, stmt("_SAVED['res'] = None")[0])
        body[i].value = r.elts[1]
        r.elts[1] = ast.Constant(None)
    res_name = names[k]
    names[k] = "_res"
    set_params(bwd, names)
    at = 1 if bwd.body and isinstance(bwd.body[0], ast.Expr) and isinstance(bwd.body[0].value, ast.Constant) else 0
    bwd.body.insert(at, stmt(f"{res_name} = _SAVED['res']")[0])
    body, i = body_of(tree, fwd)
    body.insert(i, stmt("_SAVED = {}")[0])
    return "fwd"


@heldout3_mutation("host_callback_primal", "the primal routes its output through jax.pure_callback (no vmap_method)")
def _host_callback(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef):
        return None
    done = False
    for r in list(ast.walk(d.primal)):
        if isinstance(r, ast.Return) and r.value is not None and not isinstance(r.value, (ast.Tuple, ast.List)):
            body, i = body_of(tree, r)
            body.insert(i, ast.Assign([ast.Name("_out", ast.Store())], r.value, lineno=0))
            r.value = expr("jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(jnp.shape(_out), jnp.result_type(_out)), _out)")
            done = True
    return "primal" if done else None


@heldout3_mutation("caller_diff_more", "a caller also differentiates an argument that the rules treat as a constant")
def _caller_diff_more(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fn = _eval_fn(tree)
    argnums, static = tuple(meta.get("argnums", ())), tuple(meta.get("static", ()))
    if fn is None or not argnums:
        return None
    rest = [i for i in range(len(param_names(fn))) if i not in argnums and i not in static]
    if not rest:
        return None
    meta["argnums"] = tuple(sorted(argnums + (rest[0],)))
    return "caller"


@heldout3_mutation("caller_traces_static", "a caller passes a value it used to keep static (a Python constant) as a traced argument")
def _caller_traces_static(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    static = tuple(meta.get("static", ()))
    if not static:
        return None
    meta["static"] = static[1:]
    if not meta["static"]:
        del meta["static"]
    return "caller"


@heldout3_mutation("ordered_print", "the primal prints its first argument with jax.debug.print(..., ordered=True)")
def _ordered_print(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef) or not d.params:
        return None
    body = d.primal.body
    at = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    body.insert(at, stmt(f"jax.debug.print('{d.params[0]} = {{}}', {d.params[0]}, ordered=True)")[0])
    return "primal"


# ----------------------------------------------------------------------------- heldout4 operators
#
# Written for the fourth held-out set (2026-12-07, blind to vjplint's rules), from JAX 0.10.2's
# checks (each row of heldout4/OPERATORS.md names the check): other places and spellings of the
# mistakes heldout3's operators make, and checks no operator reached. They apply to heldout4's and
# heldout5's bases only (`ONLY_SETS`); heldout3's operators apply to heldout4 as well (`heldout3_mutation`).


def heldout4_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout4", "heldout5", "heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11")  # heldout5 ... heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


def _wrap1(node: ast.expr) -> ast.Tuple:
    return ast.Tuple([node], ast.Load())


@heldout4_mutation("bwd_trailing_comma", "row 15: bwd's return gets a trailing comma: `return (ct_x, ct_y),` nests the cotangents in a 1-tuple")
def _bwd_trailing_comma(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if isinstance(r, ast.Tuple):
            replace(tree, r, _wrap1(r))
            done = True
    return "bwd" if done else None


@heldout4_mutation("fwd_trailing_comma", "row 12: fwd's return gets a trailing comma: `return (out, res),` is a 1-tuple, not a pair")
def _fwd_trailing_comma(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        replace(tree, r, _wrap1(r))
        done = True
    return "fwd" if done else None


@heldout4_mutation("jvp_trailing_comma", "row 4: the jvp rule's return gets a trailing comma: `return (primal_out, tangent_out),`")
def _jvp_trailing_comma(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        replace(tree, r, _wrap1(r))
        done = True
    return "jvp" if done else None


@heldout4_mutation("fwd_pair_swapped", "rows 12-14: fwd returns (residuals, output), the order bwd takes them in, instead of (output, residuals)")
def _fwd_pair_swapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        r.elts = [r.elts[1], r.elts[0]]
        done = True
    return "fwd" if done else None


def _bwd_res_param(d: Deriv) -> Optional[Tuple[ast.FunctionDef, str]]:
    bwd = d.rules.get("bwd")
    k = len(d.nondiff)
    if not isinstance(bwd, ast.FunctionDef) or bwd.args.vararg or len(param_names(bwd)) != k + 2:
        return None
    return bwd, param_names(bwd)[k]


@heldout4_mutation("residual_dict", "row 31, look-alike (any pytree of arrays is a residual): fwd saves its residuals in a dict, bwd reads them by key")
def _residual_dict(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    got = _bwd_res_param(d)
    pairs = _rule_pairs(d.rules.get("fwd"))
    if got is None or not pairs:
        return None
    bwd, res = got
    node = unpacking(bwd, res)
    if node is None:
        return None
    keys = [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
    if len(keys) != len(node.targets[0].elts):
        return None
    for r in pairs:
        if not isinstance(r.elts[1], (ast.Tuple, ast.List)) or len(r.elts[1].elts) != len(keys):
            return None
    for r in pairs:
        r.elts[1] = ast.Dict([ast.Constant(k) for k in keys], list(r.elts[1].elts))
    node.value = ast.Tuple([expr(f"{res}[{k!r}]") for k in keys], ast.Load())
    return "fwd"


@heldout4_mutation("residual_str_flag", "row 31: residuals must be JAX types: fwd also saves a Python string (which branch it took) beside its residuals")
def _residual_str_flag(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    got = _bwd_res_param(d)
    pairs = _rule_pairs(d.rules.get("fwd"))
    if got is None or not pairs:
        return None
    bwd, res = got
    for r in pairs:
        r.elts[1] = ast.Tuple([r.elts[1], ast.Constant("fwd")], ast.Load())
    at = 1 if bwd.body and isinstance(bwd.body[0], ast.Expr) and isinstance(bwd.body[0].value, ast.Constant) else 0
    bwd.body.insert(at, stmt(f"{res}, _mode = {res}")[0])
    return "fwd"


@heldout4_mutation("bwd_zero_for_none", "row 17: bwd returns the Python float 0.0 where it returned None (no gradient) for an argument")
def _bwd_zero_for_none(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        for i, e in enumerate(r.elts):
            if is_none(e):
                r.elts[i] = ast.Constant(0.0)
                done = True
                break
    return "bwd" if done else None


@heldout4_mutation("jvp_tangent_none", "row 5: the jvp rule returns None as its tangent output (meant: no derivative)")
def _jvp_tangent_none(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        r.elts[1] = ast.Constant(None)
        done = True
    return "jvp" if done else None


@heldout4_mutation("jvp_tangent_zero", "row 8: the jvp rule returns the Python float 0.0 as its tangent (a zero-derivative shortcut)")
def _jvp_tangent_zero(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        r.elts[1] = ast.Constant(0.0)
        done = True
    return "jvp" if done else None


def _tangent_names(d: Deriv) -> Tuple[Optional[Fn], List[str]]:
    rule = jvp_rule(d)
    if rule is not None and len(param_names(rule)) >= 2:
        tangents = param_names(rule)[-1]
        node = unpacking(rule, tangents)
        if node is not None:
            return rule, [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
        return rule, []
    if d.defjvps and isinstance(d.defjvps[0], ast.Lambda):
        return d.defjvps[0], param_names(d.defjvps[0])[:1]
    return None, []


@heldout4_mutation("tangent_dropped", "row 35: the jvp rule forgets to multiply by one input tangent (`t` becomes `jnp.ones_like(t)` where it is first used): not linear")
def _tangent_dropped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    target, names = _tangent_names(d)
    if target is None or not names:
        return None
    skip = set()
    if not isinstance(target, ast.Lambda):
        for n in ast.walk(target):
            if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Subscript)):
                skip.update(id(x) for x in ast.walk(n.value))
    body = target.body if isinstance(target, ast.Lambda) else target
    for n in ast.walk(body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names and id(n) not in skip:
            replace(tree, n, expr(f"jnp.ones_like({n.id})"))
            return "jvp" if d.method != "defjvps" else "defjvps"
    return None


def _creator_decorator_index(d: Deriv) -> Optional[int]:
    if d.creator_style != "decorator":
        return None
    return next((i for i, dec in enumerate(d.primal.decorator_list) if dec is d.creator), None)


@heldout4_mutation("jit_over_creator", "row 2: `@jax.jit` stacked above the creator (or `jax.jit(jax.custom_vjp(f))`): the name no longer has .defvjp/.defjvp")
def _jit_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i, expr("jax.jit"))
        return "creator"
    if d.creator_stmt is not None:
        d.creator_stmt.value = ast.Call(func=expr("jax.jit"), args=[d.creator], keywords=[])
        return "creator"
    return None


@heldout4_mutation("jit_under_creator", "row 32: the primal jitted beneath the creator (`@custom_jvp @jax.jit def f`): accepted, unless an argument is not a JAX type (a callable)")
def _jit_under_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i + 1, expr("jax.jit"))
        return "primal"
    if d.creator_style == "call" and d.creator.args:
        d.creator.args[0] = ast.Call(func=expr("jax.jit"), args=[d.creator.args[0]], keywords=[])
        return "primal"
    return None


@heldout4_mutation("nondiff_to_registration", "row 33: nondiff_argnums given to defvjp/defjvp instead of the creator (TypeError: unexpected keyword)")
def _nondiff_to_registration(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    nd = d.nondiff
    if not nd or d.method == "defjvps":
        return None
    set_nondiff(d, (), tree)
    kw = ast.keyword("nondiff_argnums", expr(repr(tuple(nd))))
    if d.reg_stmt is not None:
        d.registration.keywords.append(kw)
    else:
        d.reg_decorated.decorator_list = [ast.Call(func=expr("functools.partial"), args=[d.registration.func],
                                                   keywords=list(d.registration.keywords) + [kw])]
    return "creator"


@heldout4_mutation("nondiff_argnames_typo", "row 34: nondiff_argnums rewritten as nondiff_argnames, one name misspelled (a plural/singular slip; JAX ignores an unknown name)")
def _nondiff_argnames_typo(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    nd = d.nondiff
    if not nd or not isinstance(d.primal, ast.FunctionDef) or max(nd) >= len(d.params):
        return None
    names = [d.params[i] for i in nd]
    names[0] = names[0][:-1] if names[0].endswith("s") and len(names[0]) > 1 else names[0] + "s"
    kw = ast.keyword("nondiff_argnames", expr(repr(tuple(names))))
    kws = [k for k in d.keywords if k.arg not in ("nondiff_argnums", "nondiff_argnames")] + [kw]
    if d.creator_style == "call":
        d.creator.keywords = kws
    else:
        kind = "jax.custom_vjp" if d.kind == "vjp" else "jax.custom_jvp"
        new = ast.Call(func=expr("functools.partial"), args=[expr(kind)], keywords=kws)
        d.primal.decorator_list = [new if dec is d.creator else dec for dec in d.primal.decorator_list]
    return "creator"


@heldout4_mutation("primal_kwonly_option", "row 3, look-alike: the primal gets a keyword-only option with a default (`*, eps=1e-6`), its callers unchanged (resolve_kwargs drops an unpassed default)")
def _primal_kwonly(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef) or d.primal.args.kwonlyargs or d.primal.args.kwarg or "eps" in d.params:
        return None
    d.primal.args.kwonlyargs = [ast.arg("eps")]
    d.primal.args.kw_defaults = [ast.Constant(1e-6)]
    return "primal"


@heldout4_mutation("caller_kwonly_option", "row 3: the primal gets a keyword-only option (`*, eps=1e-6`) and its caller passes it, `f(x, y, eps=1e-6)`")
def _caller_kwonly(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if _primal_kwonly(tree, d, meta) is None:
        return None
    inside = {id(n) for fn in [d.primal] + [f for _, f in _rule_defs(d)] for n in ast.walk(fn)}
    done = False
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == d.name and id(n) not in inside:
            n.keywords.append(ast.keyword("eps", ast.Constant(1e-6)))
            done = True
    return "caller" if done else None


@heldout4_mutation("remat_symbolic_zeros", "row 10: defvjp gets both optimize_remat=True and symbolic_zeros=True (the rules unchanged)")
def _remat_symbolic(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method != "defvjp":
        return None
    if _reg_keyword(tree, d, "optimize_remat") is None:
        return None
    if d.reg_decorated is not None:
        return None
    return _reg_keyword(tree, d, "symbolic_zeros")


@heldout4_mutation("defvjp_keywords", "row 36, look-alike: defvjp called with keywords, `f.defvjp(fwd=fwd, bwd=bwd)`")
def _defvjp_keywords(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method != "defvjp" or len(d.registration.args) != 2 or d.reg_stmt is None:
        return None
    fwd, bwd = d.registration.args
    d.registration.args = []
    d.registration.keywords = [ast.keyword("fwd", fwd), ast.keyword("bwd", bwd)] + list(d.registration.keywords)
    return "registration"


def _module_functions(tree: ast.Module) -> Dict[str, ast.FunctionDef]:
    return {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}


@heldout4_mutation("caller_closure_nondiff", "row 37: the caller passes the integrand (a nondiff callable) as a lambda closing over the differentiated parameters, not through the extra arguments")
def _caller_closure(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fn = _eval_fn(tree)
    if fn is None:
        return None
    mods = _module_functions(tree)
    for call in ast.walk(fn):
        if not isinstance(call, ast.Call) or not call.args or not isinstance(call.args[0], ast.Name):
            continue
        g = mods.get(call.args[0].id)
        if g is None or g.name.startswith("eval_") or g.args.vararg:
            continue
        p = len(g.args.args)
        if p < 2:
            continue
        last = call.args[-1]
        if isinstance(last, (ast.Tuple, ast.List)) and len(last.elts) == p - 1 and len(call.args) >= 2:
            extra, keep = list(last.elts), call.args[1:-1]
        elif len(call.args) >= p + 1:
            extra, keep = call.args[len(call.args) - (p - 1):], call.args[1:len(call.args) - (p - 1)]
        else:
            continue
        x = g.args.args[0].arg
        lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(x)], vararg=None, kwonlyargs=[], kw_defaults=[],
                                            kwarg=None, defaults=[]),
                         body=ast.Call(func=ast.Name(g.name, ast.Load()), args=[ast.Name(x, ast.Load())] + list(extra), keywords=[]))
        call.args = [lam] + list(keep)
        return "caller"
    return None


def _via_helper(tree: ast.Module, fn: Optional[Fn]) -> Optional[ast.FunctionDef]:
    """Move a def rule's body into `_<name>_impl` (the rule returns its call); the helper, for editing."""
    if not isinstance(fn, ast.FunctionDef) or fn.args.vararg or fn.args.kwonlyargs:
        return None
    impl = copy.deepcopy(fn)
    impl.name = f"_{fn.name}_impl"
    impl.decorator_list = []
    body, i = body_of(tree, fn)
    body.insert(i, impl)
    fn.body = [ast.Return(expr(f"{impl.name}({', '.join(param_names(fn))})"))]
    return impl


@heldout4_mutation("bwd_bare_in_helper", "row 15 through a helper: bwd returns a helper's result, and the helper returns the one cotangent bare")
def _bwd_bare_in_helper(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    rets = [r for r in tuple_returns(bwd) if isinstance(r, ast.Tuple) and len(r.elts) == 1]
    if not rets or not isinstance(bwd, ast.FunctionDef):
        return None
    impl = _via_helper(tree, bwd)
    if impl is None:
        return None
    for r in tuple_returns(impl):
        if isinstance(r, ast.Tuple) and len(r.elts) == 1:
            replace(tree, r, r.elts[0])
    return "bwd"


@heldout4_mutation("jvp_not_pair_in_helper", "row 4 through a helper: the jvp rule returns a helper's result, and the helper returns the tangent alone")
def _jvp_not_pair_in_helper(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    if not _rule_pairs(rule) or not isinstance(rule, ast.FunctionDef):
        return None
    if d.reg_decorated is not None:
        rule_decs, rule.decorator_list = rule.decorator_list, []
        impl = _via_helper(tree, rule)
        rule.decorator_list = rule_decs
    else:
        impl = _via_helper(tree, rule)
    if impl is None:
        return None
    for r in _rule_pairs(impl):
        replace(tree, r, r.elts[1])
    return "jvp"

# ----------------------------------------------------------------------------- heldout5 operators
#
# Written for the fifth held-out set (2026-12-07, blind to vjplint's rules), from JAX 0.10.2's
# checks (each row of heldout5/OPERATORS.md names the check): new callers (jax.linearize,
# jax.checkpoint, lax.scan, vmap with in_axes), dtype changes (float16 inputs, integer cotangents,
# float16 tangents), a signature that gains a parameter, negative nondiff_argnums, other
# containers (dict, list) for cotangents, residuals and outputs, and a traced value made a Python
# float. They apply to heldout5's bases only (`ONLY_SETS`); heldout3's and heldout4's operators
# apply to heldout5 as well.


def heldout5_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout5", "heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11")  # heldout6 ... heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


def _caller(tree: ast.Module, name: str, body: str, expected: Optional[str]) -> str:
    """Append `def <name>(*args)` (its body given) and an `eval_custom` check of it: compared with
    `expected` (an expression of `args`) when given, else only run."""
    exp = f"({name}(*args), {expected})" if expected else f"({name}(*args), None)[1]"
    tree.body.extend(stmt(
        f"def {name}(*args):\n{body}\n\n"
        f"def eval_custom():\n    args = tuple(eval_inputs())\n    return {{{name!r}: lambda: {exp}}}\n"))
    return "caller"


def _plain_grad(argnums: Tuple[int, ...]) -> str:
    return f"jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r})(*args)"


@heldout5_mutation("linearize_caller", "row 22 through jax.linearize: a caller linearizes the function (forward mode) to reuse its jvp at several tangents")
def _linearize_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = (f"    argnums = {argnums!r}\n"
            "    def along(*diff):\n"
            "        full = list(args)\n"
            "        for p, v in zip(argnums, diff):\n"
            "            full[p] = v\n"
            "        return jnp.sum(eval_fn(*full))\n"
            "    diff = tuple(jnp.asarray(args[p], jnp.float32) for p in argnums)\n"
            "    _, f_jvp = jax.linearize(along, *diff)\n"
            "    return f_jvp(*[jnp.ones_like(x) for x in diff])")
    return _caller(tree, "linearize_usage", body, None)


@heldout5_mutation("checkpoint_caller", "row 11's neighbour, look-alike expected: a caller wraps the function in jax.checkpoint (remat) and differentiates it")
def _checkpoint_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums, static = tuple(meta.get("argnums", ())), tuple(meta.get("static", ()))
    if not argnums:
        return None
    body = (f"    f = jax.checkpoint(eval_fn, static_argnums={static!r})\n"
            f"    return jax.grad(lambda *a: jnp.sum(f(*a)), argnums={argnums!r})(*args)")
    return _caller(tree, "checkpoint_usage", body, _plain_grad(argnums))


@heldout5_mutation("scan_caller", "custom rules under lax.scan (partial eval and transpose of the scan body): a caller accumulates the loss over steps in a lax.scan body that calls the function")
def _scan_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = ("    def loss(*a):\n"
            "        def body(carry, _):\n"
            "            return carry + jnp.sum(eval_fn(*a)), None\n"
            "        total, _ = jax.lax.scan(body, jnp.float32(0.0), None, length=2)\n"
            "        return total\n"
            f"    return jax.grad(loss, argnums={argnums!r})(*args)")
    return _caller(tree, "scan_usage", body, f"tuple(2.0 * g for g in {_plain_grad(argnums)})")


@heldout5_mutation("vmap_in_axes_caller", "custom rules under vmap with in_axes (batching.py: a batched input beside an unbatched differentiated one): a caller vmaps the gradient over the last argument only")
def _vmap_in_axes_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums, static = tuple(meta.get("argnums", ())), tuple(meta.get("static", ()))
    fn = _eval_fn(tree)
    if not argnums or fn is None:
        return None
    n = len(param_names(fn))
    batched = [i for i in range(n) if i not in static and i != argnums[0]]
    if not batched:
        return None
    b = batched[-1]
    body = (f"    p, b = {argnums[0]!r}, {b!r}\n"
            "    stacked = jnp.stack([jnp.asarray(args[b]), jnp.asarray(args[b]) * 0.9])\n"
            f"    in_axes = tuple(0 if i == b else None for i in range({n}))\n"
            "    g = jax.vmap(jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=p), in_axes=in_axes)\n"
            "    return g(*[stacked if i == b else a for i, a in enumerate(args)])")
    expected = (f"jnp.stack([jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums[0]!r})"
                f"(*[jnp.asarray(a) * s if i == {b!r} else a for i, a in enumerate(args)]) for s in (1.0, 0.9)])")
    return _caller(tree, "vmap_in_axes_usage", body, expected)


@heldout5_mutation("caller_f16_input", "rows 17/8 from the call site: the caller passes a differentiated input in float16 (mixed precision); the rules keep computing in float32")
def _caller_f16_input(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    fns = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "eval_inputs"]
    if not argnums or not fns:
        return None
    fn = fns[0]
    fn.name = "_eval_inputs_f32"
    i = tree.body.index(fn)
    tree.body[i + 1:i + 1] = stmt(
        "def eval_inputs():\n"
        "    args = list(_eval_inputs_f32())\n"
        f"    args[{argnums[0]!r}] = jnp.asarray(args[{argnums[0]!r}], jnp.float16)\n"
        "    return tuple(args)\n")
    return "caller"


@heldout5_mutation("primal_new_param", "row 19: the primal gains a trailing parameter with a default (`scale=1.0`, scaling its first differentiated input), its rules not updated (JAX passes the default to fwd / into the jvp rule's primals)")
def _primal_new_param(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    p = d.primal
    if not isinstance(p, ast.FunctionDef) or p.args.vararg or p.args.kwonlyargs or p.args.kwarg or "scale" in d.params:
        return None
    first = d.params[d.diff_positions[0]] if d.diff_positions else None
    if first is None:
        return None
    p.args.args.append(ast.arg("scale"))
    p.args.defaults.append(ast.Constant(1.0))
    at = 1 if p.body and isinstance(p.body[0], ast.Expr) and isinstance(p.body[0].value, ast.Constant) else 0
    p.body.insert(at, stmt(f"{first} = jax.tree_util.tree_map(lambda t: t * scale, {first})")[0])
    return "primal"


@heldout5_mutation("nondiff_negative", "row 38: nondiff_argnums rewritten with negative indices counted from the end (`(-1,)` for the last): checked only against the arguments passed (api_util.py:230-240), never normalised (custom_derivatives.py:179-182, :299-307, :746-752)")
def _nondiff_negative(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    nd = d.nondiff
    if not nd or not isinstance(d.primal, ast.FunctionDef) or d.primal.args.vararg:
        return None
    n = len(d.params)
    set_nondiff(d, tuple(p - n for p in nd), tree)
    return "creator"


@heldout5_mutation("bwd_ct_int", "row 17 with an integer dtype (not exempted like a float one): bwd returns a cotangent cast to int32 (`astype(jnp.int32)`) for a float input")
def _bwd_ct_int(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r, i in _first_ct(d):
        while isinstance(r.elts[i], (ast.Tuple, ast.List)) and r.elts[i].elts:  # a pytree cotangent: its first leaf
            r, i = r.elts[i], 0
        r.elts[i] = ast.Call(func=ast.Attribute(r.elts[i], "astype", ast.Load()), args=[expr("jnp.int32")], keywords=[])
        done = True
    return "bwd" if done else None


def _diff_param_names(d: Deriv) -> Optional[List[str]]:
    if not isinstance(d.primal, ast.FunctionDef) or d.primal.args.vararg:
        return None
    return [d.params[i] for i in d.diff_positions]


@heldout5_mutation("bwd_ct_dict", "row 15 with a dict: bwd returns its cotangents keyed by parameter name, `{'x': ct_x, 'y': ct_y}`, instead of a tuple in the primal's order")
def _bwd_ct_dict(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    names = _diff_param_names(d)
    rets = [r for r in tuple_returns(d.rules.get("bwd")) if isinstance(r, ast.Tuple)]
    if not names or not rets or any(len(r.elts) != len(names) for r in rets):
        return None
    for r in rets:
        replace(tree, r, ast.Dict([ast.Constant(k) for k in names], list(r.elts)))
    return "bwd"


@heldout5_mutation("bwd_drop_none_comprehension", "row 15 through a comprehension: bwd filters the None cotangents out, `tuple(c for c in (...) if c is not None)`")
def _bwd_drop_none(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if isinstance(r, ast.Tuple) and any(is_none(e) for e in r.elts) and any(not is_none(e) for e in r.elts):
            new = expr("tuple((c for c in () if c is not None))")
            new.args[0].generators[0].iter = ast.Tuple(list(r.elts), ast.Load())
            replace(tree, r, new)
            done = True
    return "bwd" if done else None


@heldout5_mutation("residual_list", "row 31, look-alike (a list is a pytree): fwd saves its residuals in a list, `[a, b]`, bwd unpacks it as before")
def _residual_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        if isinstance(r.elts[1], ast.Tuple) and r.elts[1].elts:
            r.elts[1] = ast.List(list(r.elts[1].elts), ast.Load())
            done = True
    return "fwd" if done else None


@heldout5_mutation("fwd_out_list", "row 13 with a list: fwd returns a multi-output primal as a list, `([w, v], res)`, where the primal returns a tuple")
def _fwd_out_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        if isinstance(r.elts[0], ast.Tuple) and len(r.elts[0].elts) >= 2:
            r.elts[0] = ast.List(list(r.elts[0].elts), ast.Load())
            done = True
    return "fwd" if done else None


@heldout5_mutation("jvp_tangent_list", "row 5 with a list: the jvp rule returns a multi-output tangent as a list, `(primal_out, [dw, dv])`, where the primal output is a tuple")
def _jvp_tangent_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        if isinstance(r.elts[1], ast.Tuple) and len(r.elts[1].elts) >= 2:
            r.elts[1] = ast.List(list(r.elts[1].elts), ast.Load())
            done = True
    return "jvp" if done else None


@heldout5_mutation("jvp_tangent_f16", "row 8 with float16: the jvp rule returns its (first) tangent output in float16, the primal in float32 (a mixed-precision rule)")
def _jvp_tangent_f16(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        t = r.elts[1]
        if isinstance(t, (ast.Tuple, ast.List)):
            t.elts[0] = ast.Call(func=expr("jnp.asarray"), args=[t.elts[0], expr("jnp.float16")], keywords=[])
        else:
            r.elts[1] = ast.Call(func=expr("jnp.asarray"), args=[t, expr("jnp.float16")], keywords=[])
        done = True
    return "jvp" if done else None


@heldout5_mutation("defjvps_none_entry", "look-alike (JAX takes None as a zero tangent rule): one defjvps entry replaced by None")
def _defjvps_none_entry(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    args = d.registration.args
    if d.method != "defjvps" or len(args) < 2:
        return None
    idx = [i for i, a in enumerate(args) if not is_none(a)]
    if len(idx) < 2:
        return None
    args[idx[-1]] = ast.Constant(None)
    return "defjvps"


@heldout5_mutation("residual_python_float", "a traced value made a Python float in fwd (ConcretizationTypeError, core.py): fwd saves `float(jnp.max(jnp.abs(x)))` beside its residuals, for a scale bwd logs")
def _residual_python_float(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    got = _bwd_res_param(d)
    fwd = d.rules.get("fwd")
    pairs = _rule_pairs(fwd)
    if got is None or not pairs or not isinstance(fwd, ast.FunctionDef) or not param_names(fwd):
        return None
    bwd, res = got
    x = param_names(fwd)[len(d.nondiff)] if len(param_names(fwd)) > len(d.nondiff) else param_names(fwd)[0]
    for r in pairs:
        r.elts[1] = ast.Tuple([r.elts[1], expr(f"float(jnp.max(jnp.abs({x})))")], ast.Load())
    at = 1 if bwd.body and isinstance(bwd.body[0], ast.Expr) and isinstance(bwd.body[0].value, ast.Constant) else 0
    bwd.body.insert(at, stmt(f"{res}, _scale = {res}")[0])
    return "fwd"


@heldout5_mutation("creator_on_method", "custom_jvp / custom_vjp objects are not descriptors (no `__get__`): the definition moved into a class as methods taking `self` (primal, rules and registration in the class body), used through an instance")
def _creator_on_method(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    stmts = _moved_definition(tree, d)
    if stmts is None or any(isinstance(fn, ast.Lambda) for _, fn in _rule_defs(d)) or isinstance(d.primal, ast.Lambda):
        return None
    funcs = [s for s in stmts if isinstance(s, ast.FunctionDef)]
    if any(f.args.vararg or "self" in param_names(f) for f in funcs):
        return None
    for f in funcs:
        f.args.args.insert(0, ast.arg("self"))
        for n in [n for st in f.body for n in ast.walk(st)]:  # the body, not the decorators (`@f.defjvp` stays)
            for field, value in ast.iter_fields(n):
                if isinstance(value, ast.Name) and value.id == d.name and isinstance(value.ctx, ast.Load):
                    setattr(n, field, expr(f"self.{d.name}"))
                elif isinstance(value, list):
                    for i, v in enumerate(value):
                        if isinstance(v, ast.Name) and v.id == d.name and isinstance(v.ctx, ast.Load):
                            value[i] = expr(f"self.{d.name}")
    at = tree.body.index(stmts[0])
    tree.body = [s for s in tree.body if not any(s is m for m in stmts)]
    cls = ast.ClassDef(name="_Layer", bases=[], keywords=[], body=stmts, decorator_list=[], type_params=[], lineno=0)
    tree.body[at:at] = [cls, ast.Assign([ast.Name(d.name, ast.Store())], expr(f"_Layer().{d.name}"), lineno=0)]
    return "definition"


# ----------------------------------------------------------------------------- heldout6 operators
#
# Written for the sixth held-out set (2026-12-07, blind to vjplint's rules), from JAX 0.10.2's
# checks (each row of heldout6/OPERATORS.md names the check): nondiff_argnums spelled as an int
# or a list, the creator doubled or wrapped by a `functools.wraps` decorator, cotangents and
# tangents flattened, reduced with keepdims, transposed or made complex, a Python `if` on a
# traced cotangent or tangent (a finiteness guard), residuals in a dataclass (registered as a
# pytree or not), and new callers (jax.jacrev, jax.vjp called twice, jax.jvp, lax.cond, vmap of
# vmap, jax.eval_shape). They apply to heldout6's bases only (`ONLY_SETS`); heldout3's, heldout4's
# and heldout5's operators apply to heldout6 as well.


def heldout6_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11")  # heldout7 ... heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


def _ensure_import(tree: ast.Module, module: str) -> None:
    """`import <module>` after the module's imports, unless it binds that name already."""
    if any(isinstance(n, ast.Import) and any(a.name == module and a.asname is None for a in n.names) for n in tree.body):
        return
    at = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            at = i + 1
    tree.body.insert(at, ast.parse(f"import {module}").body[0])


def _after_imports(tree: ast.Module, statements: List[ast.stmt]) -> None:
    at = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            at = i + 1
    tree.body[at:at] = statements


def _nondiff_keyword(d: Deriv) -> Optional[ast.keyword]:
    return next((k for k in d.keywords if k.arg == "nondiff_argnums" and isinstance(k.value, ast.Tuple)), None)


def _docstring_at(fn: ast.FunctionDef) -> int:
    return 1 if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) else 0


@heldout6_mutation("nondiff_missing_comma", "custom_derivatives.py:179-180 (`nondiff_argnums_.update(nondiff_argnums)`): a one-element `nondiff_argnums=(1,)` loses its comma, `(1)`, which Python reads as the int 1 (TypeError at definition)")
def _nondiff_missing_comma(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    kw = _nondiff_keyword(d)
    if kw is None or len(kw.value.elts) != 1:
        return None
    kw.value = kw.value.elts[0]
    return "creator"


@heldout6_mutation("nondiff_as_list", "custom_derivatives.py:179-182, look-alike expected: nondiff_argnums written as a list, `[1, 2]` (JAX sorts any iterable into a tuple)")
def _nondiff_as_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    kw = _nondiff_keyword(d)
    if kw is None or not kw.value.elts:
        return None
    kw.value = ast.List(list(kw.value.elts), ast.Load())
    return "creator"


@heldout6_mutation("creator_twice", "row 2 by doubling: the creator applied twice (a pasted `@custom_vjp` decorator, `custom_vjp(custom_vjp(f))`): the outer function's primal is an inner custom function that was never registered (`No VJP/JVP defined`, custom_derivatives.py:287, :723)")
def _creator_twice(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i, copy.deepcopy(d.creator))
        return "creator"
    if d.creator_style == "call" and d.creator.args:
        d.creator.args[0] = ast.Call(func=copy.deepcopy(d.creator.func), args=[d.creator.args[0]],
                                     keywords=copy.deepcopy(d.creator.keywords))
        return "creator"
    return None


_LOG_CALLS = ("def _log_calls(fn):\n"
              "    @functools.wraps(fn)\n"
              "    def wrapper(*args, **kwargs):\n"
              "        return fn(*args, **kwargs)\n"
              "    return wrapper\n")


def _log_calls(tree: ast.Module, d: Deriv, above: bool) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i if above else i + 1, expr("_log_calls"))
    elif d.creator_style == "call" and d.creator_stmt is not None and d.creator.args:
        if above:
            d.creator_stmt.value = ast.Call(func=expr("_log_calls"), args=[d.creator], keywords=[])
        else:
            d.creator.args[0] = ast.Call(func=expr("_log_calls"), args=[d.creator.args[0]], keywords=[])
    else:
        return None
    _ensure_import(tree, "functools")
    _after_imports(tree, stmt(_LOG_CALLS))
    return "creator" if above else "primal"


@heldout6_mutation("wraps_over_creator", "row 2 through a user decorator: a call-logging decorator written with functools.wraps stacked above the creator; the name is then a plain function (functools.wraps copies `__dict__`, not the class's defvjp/defjvp)")
def _wraps_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _log_calls(tree, d, above=True)


@heldout6_mutation("wraps_under_creator", "rows 3/19, look-alike expected: the functools.wraps logging decorator beneath the creator (the signature is followed through `__wrapped__`, so nondiff_argnums and resolve_kwargs still see the parameters)")
def _wraps_under_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _log_calls(tree, d, above=False)


def _edit_first_ct(tree: ast.Module, d: Deriv, make: Callable[[ast.expr], ast.expr]) -> Optional[str]:
    done = False
    for r, i in _first_ct(d):
        while isinstance(r.elts[i], (ast.Tuple, ast.List)) and r.elts[i].elts:  # a pytree cotangent: its first leaf
            r, i = r.elts[i], 0
        r.elts[i] = make(r.elts[i])
        done = True
    return "bwd" if done else None


def _method_call(node: ast.expr, method: str, args: str) -> ast.expr:
    call = expr(f"_x.{method}({args})")
    call.func.value = node
    return call


@heldout6_mutation("bwd_ct_flattened", "row 17 by a reshape: bwd returns its first cotangent flattened, `.reshape(-1)` (as a flat parameter vector), for an input that is not 1-D")
def _bwd_ct_flattened(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _edit_first_ct(tree, d, lambda n: _method_call(n, "reshape", "-1"))


@heldout6_mutation("bwd_ct_keepdims", "row 17 by keepdims: bwd sums its first cotangent over the leading (batch) axis with keepdims=True, as for a broadcast parameter, where the input has that axis")
def _bwd_ct_keepdims(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    def make(n: ast.expr) -> ast.expr:
        call = expr("jnp.sum(_x, axis=0, keepdims=True)")
        call.args[0] = n
        return call
    return _edit_first_ct(tree, d, make)


@heldout6_mutation("bwd_ct_complex", "row 17's exemption (`_temporary_dtype_exception`, custom_derivatives.py:1007-1013: any same-shape inexact dtype passes): bwd returns its first cotangent as complex64 (a rule ported from a complex-valued version)")
def _bwd_ct_complex(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    def make(n: ast.expr) -> ast.expr:
        call = expr("jnp.asarray(_x, jnp.complex64)")
        call.args[0] = n
        return call
    return _edit_first_ct(tree, d, make)


@heldout6_mutation("bwd_ct_transposed", "row 17 or silently wrong: bwd returns its first cotangent transposed, `.T` (a row/column-major slip): a shape error for a non-square matrix, a wrong gradient for a square one")
def _bwd_ct_transposed(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    def make(n: ast.expr) -> ast.expr:
        att = expr("_x.T")
        att.value = n
        return att
    return _edit_first_ct(tree, d, make)


def _edit_tangent(tree: ast.Module, d: Deriv, make: Callable[[ast.expr], ast.expr]) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        t = r.elts[1]
        if isinstance(t, (ast.Tuple, ast.List)) and t.elts:
            t.elts[0] = make(t.elts[0])
        else:
            r.elts[1] = make(t)
        done = True
    return "jvp" if done else None


@heldout6_mutation("jvp_tangent_flattened", "row 8 by a reshape: the jvp rule returns its (first) tangent output flattened, `.reshape(-1)`, where the primal output is not 1-D")
def _jvp_tangent_flattened(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _edit_tangent(tree, d, lambda n: _method_call(n, "reshape", "-1"))


@heldout6_mutation("jvp_tangent_complex", "row 8 by dtype: the jvp rule returns its (first) tangent output as complex64, the primal output real (custom_derivatives.py:383-403 compares the tangent dtype with the primal's tangent dtype)")
def _jvp_tangent_complex(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    def make(n: ast.expr) -> ast.expr:
        call = expr("jnp.asarray(_x, jnp.complex64)")
        call.args[0] = n
        return call
    return _edit_tangent(tree, d, make)


_GUARD = ("if not all((jnp.all(jnp.isfinite(_c)) for _c in jax.tree_util.tree_leaves({name}))):\n"
          "    raise FloatingPointError('non-finite {what} in {rule}')\n")


@heldout6_mutation("bwd_finite_guard", "TracerBoolConversionError (core.py, a tracer's `__bool__`): bwd starts with a debugging guard, `if not all(jnp.all(jnp.isfinite(c)) for c in tree_leaves(g)): raise ...`, a Python `if` on the traced cotangent")
def _bwd_finite_guard(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    k = len(d.nondiff)
    if not isinstance(bwd, ast.FunctionDef) or bwd.args.vararg or len(param_names(bwd)) != k + 2:
        return None
    g = param_names(bwd)[k + 1]
    bwd.body[_docstring_at(bwd):_docstring_at(bwd)] = stmt(_GUARD.format(name=g, what="cotangent", rule=bwd.name))
    _ensure_import(tree, "jax")
    return "bwd"


@heldout6_mutation("jvp_finite_guard", "TracerBoolConversionError (core.py): the jvp rule starts with the same guard on its tangents, a Python `if` on traced tangents (the rule is traced under jit, grad and vmap)")
def _jvp_finite_guard(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    if not isinstance(rule, ast.FunctionDef) or rule.args.vararg or len(param_names(rule)) != len(d.nondiff) + 2:
        return None
    t = param_names(rule)[-1]
    rule.body[_docstring_at(rule):_docstring_at(rule)] = stmt(_GUARD.format(name=t, what="tangent", rule=rule.name))
    _ensure_import(tree, "jax")
    return "jvp"


def _residual_dataclass(tree: ast.Module, d: Deriv, registered: bool) -> Optional[str]:
    got = _bwd_res_param(d)
    pairs = _rule_pairs(d.rules.get("fwd"))
    if got is None or not pairs:
        return None
    bwd, res = got
    node = unpacking(bwd, res)
    if node is None:
        return None
    keys = [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
    if len(keys) != len(node.targets[0].elts) or len(set(keys)) != len(keys) or "_" in keys:
        return None
    for r in pairs:
        if not isinstance(r.elts[1], (ast.Tuple, ast.List)) or len(r.elts[1].elts) != len(keys):
            return None
    for r in pairs:
        r.elts[1] = ast.Call(func=ast.Name("_Residuals", ast.Load()), args=list(r.elts[1].elts), keywords=[])
    node.value = ast.Tuple([expr(f"{res}.{k}") for k in keys], ast.Load())
    decorators = ("@jax.tree_util.register_dataclass\n" if registered else "") + "@dataclasses.dataclass\n"
    # `jax.Array` annotations: eval/oracle.py compiles a case under its own `from __future__ import
    # annotations`, and dataclasses resolves a bare string annotation through sys.modules[cls.__module__]
    fields = "".join(f"    {k}: jax.Array\n" for k in keys)
    _ensure_import(tree, "dataclasses")
    _ensure_import(tree, "jax")
    _after_imports(tree, stmt(f"{decorators}class _Residuals:\n{fields}"))
    return "fwd"


@heldout6_mutation("residual_dataclass", "row 31 with a class: fwd saves its residuals in a `@dataclasses.dataclass` instance (fields named as bwd unpacked them) that is not registered as a pytree: not a valid JAX type")
def _residual_dataclass_op(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _residual_dataclass(tree, d, registered=False)


@heldout6_mutation("residual_registered_dataclass", "row 31, look-alike expected: the same residual dataclass registered with `@jax.tree_util.register_dataclass` (a pytree of arrays)")
def _residual_registered_dataclass_op(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _residual_dataclass(tree, d, registered=True)


def _caller_pair(tree: ast.Module, name: str, body: str, expected_body: str) -> str:
    """Append `def <name>(*args)` and `def <name>_expected(*args)` (their bodies given) and an
    `eval_custom` check comparing them at `eval_inputs()`."""
    tree.body.extend(stmt(
        f"def {name}(*args):\n{body}\n\n"
        f"def {name}_expected(*args):\n{expected_body}\n\n"
        f"def eval_custom():\n    args = tuple(eval_inputs())\n"
        f"    return {{{name!r}: lambda: ({name}(*args), {name}_expected(*args))}}\n"))
    _ensure_import(tree, "jax")
    return "caller"


def _grad_body(argnums: Tuple[int, ...], scale: str = "1.0") -> str:
    return (f"    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r})(*args)\n"
            f"    return tuple(({scale}) * x for x in g)")


_ALONG = ("    argnums = {argnums!r}\n"
          "    def along(*diff):\n"
          "        full = list(args)\n"
          "        for p, v in zip(argnums, diff):\n"
          "            full[p] = v\n"
          "        return eval_fn(*full)\n"
          "    diff = tuple(jnp.asarray(args[p]) for p in argnums)\n")


@heldout6_mutation("jacrev_caller", "custom rules under jax.jacrev (row 15/17's checks under vmap: the bwd is batched over the output basis, batching.py): a caller takes the full Jacobian of the vector output and sums it over the output axes")
def _jacrev_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = (f"    out = eval_fn(*args)\n"
            f"    jac = jax.jacrev(eval_fn, argnums={argnums!r})(*args)\n"
            "    return tuple(jnp.sum(j, axis=tuple(range(jnp.ndim(out)))) for j in jac)")
    return _caller_pair(tree, "jacrev_usage", body, _grad_body(argnums))


@heldout6_mutation("vjp_twice_caller", "residuals reused (custom_derivatives.py: fwd runs once, bwd once per cotangent): a caller keeps the function returned by jax.vjp and calls it with two cotangents, adding the results")
def _vjp_twice_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = (_ALONG.format(argnums=argnums)
            + "    out, f_vjp = jax.vjp(along, *diff)\n"
              "    first = f_vjp(jnp.ones_like(out))\n"
              "    second = f_vjp(2.0 * jnp.ones_like(out))\n"
              "    return tuple(a + b for a, b in zip(first, second))")
    return _caller_pair(tree, "vjp_twice_usage", body, _grad_body(argnums, "3.0"))


@heldout6_mutation("jvp_caller", "row 22 through jax.jvp (custom_vjp: `can't apply forward-mode autodiff (jvp) to a custom_vjp function`, ad.py:1297; custom_jvp: the rule itself): a caller pushes a tangent of 0.5 in every differentiated argument")
def _jvp_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = (_ALONG.format(argnums=argnums)
            + "    _, t = jax.jvp(along, diff, tuple(jnp.full_like(x, 0.5) for x in diff))\n"
              "    return jnp.sum(t)")
    expected = (f"    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r})(*args)\n"
                "    return 0.5 * sum(jnp.sum(x) for x in g)")
    return _caller_pair(tree, "jvp_usage", body, expected)


@heldout6_mutation("cond_caller", "custom rules inside lax.cond under grad (partial eval and transpose of both branches): a caller guards the loss with `lax.cond` on a finiteness test of its input")
def _cond_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = ("    def loss(*a):\n"
            f"        ok = jnp.all(jnp.isfinite(jnp.asarray(a[{argnums[0]!r}])))\n"
            "        return jax.lax.cond(ok, lambda: jnp.sum(eval_fn(*a)), lambda: jnp.zeros((), jnp.float32))\n"
            f"    return jax.grad(loss, argnums={argnums!r})(*args)")
    return _caller_pair(tree, "cond_usage", body, _grad_body(argnums))


@heldout6_mutation("vmap_vmap_caller", "custom rules under two levels of vmap (batching.py's custom_vjp / custom_jvp rules applied twice): a caller maps the gradient over a 2x2 grid of scaled inputs")
def _vmap_vmap_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    grad = (f"    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])))\n"
            f"    x = jnp.asarray(args[{p!r}])\n")
    body = grad + ("    grid = jnp.stack([jnp.stack([x, x * 0.9]), jnp.stack([x * 1.1, x * 0.8])])\n"
                   "    return jax.vmap(jax.vmap(g))(grid)")
    expected = grad + "    return jnp.stack([jnp.stack([g(x), g(x * 0.9)]), jnp.stack([g(x * 1.1), g(x * 0.8)])])"
    return _caller_pair(tree, "vmap_vmap_usage", body, expected)


@heldout6_mutation("eval_shape_caller", "custom rules traced abstractly (jax.eval_shape: every check on shapes and structures, no values): a caller asks for the gradient's shapes to allocate optimizer state")
def _eval_shape_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = (f"    shapes = jax.eval_shape(jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r}), *args)\n"
            "    return tuple(jnp.ones(s.shape, s.dtype) for s in shapes)")
    expected = (f"    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r})(*args)\n"
                "    return tuple(jnp.ones_like(x) for x in g)")
    return _caller_pair(tree, "eval_shape_usage", body, expected)



# ----------------------------------------------------------------------------- heldout7 operators
#
# Written for the seventh held-out set (2026-12-07, blind to vjplint's rules), each drawn from a row
# of the census of JAX 0.10.2's checks about custom derivatives (E-numbers; every row of
# heldout7/OPERATORS.md names its row): `@f.defvjp` used as a decorator (E49), NumPy applied to a
# traced value in bwd, fwd or the jvp rule (E40), a Python `if` on a traced primal input in fwd or
# the jvp rule (E39's route through the primal), a NamedTuple of cotangents (E18), the parameter
# names given as nondiff_argnums (E45), `jax.checkpoint` above (E63) or beneath (E65) the creator,
# `optimize_remat=True` under a second-order caller (E27), `grad` of a non-scalar output (E43), the
# primal's output tuple written as a list (E16/E06), cotangents clipped with tree_map (E18/E19,
# look-alike expected) and new callers (value_and_grad(has_aux=True), lax.map, pmap). They apply
# to heldout7's bases only (`ONLY_SETS`); the older operators apply to heldout7 on a fixed seventh of
# the pairs (`SAMPLED_SETS`, `SAMPLE_EVERY`).


def heldout7_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout7", "heldout8", "heldout9", "heldout10", "heldout11")  # heldout8 ... heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


def _body_index(tree: ast.Module, node: ast.stmt) -> Optional[Tuple[List[ast.stmt], int]]:
    try:
        return body_of(tree, node)
    except ValueError:
        return None


@heldout7_mutation("defvjp_as_decorator", "E49 (`custom_vjp.defvjp() missing 1 required positional argument: 'bwd'`, at import): the registration `f.defvjp(fwd, bwd)` rewritten as a `@f.defvjp` decorator on fwd, as `@f.defjvp` is written for a custom_jvp")
def _defvjp_as_decorator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd = d.rules.get("fwd")
    if d.method != "defvjp" or d.reg_stmt is None or not isinstance(fwd, ast.FunctionDef) or len(d.registration.args) != 2:
        return None
    anchor = d.creator_stmt if d.creator_style == "call" else d.primal
    at_fwd, at_creator = _body_index(tree, fwd), _body_index(tree, anchor)
    if at_fwd is None or at_creator is None or at_fwd[0] is not at_creator[0] or at_creator[1] > at_fwd[1]:
        return None  # the decorator needs the custom function defined before fwd, in the same body
    body, i = body_of(tree, d.reg_stmt)
    del body[i]
    fwd.decorator_list.append(expr(f"{d.name}.defvjp"))
    return "registration"


@heldout7_mutation("bwd_numpy_debug_print", "E40 (TracerArrayConversionError: `__array__()` called on a traced array): bwd starts with a debugging print of the cotangent's largest magnitude computed with NumPy (`numpy.abs(numpy.asarray(c)).max()`); eager grad runs, a traced bwd (jit) raises")
def _bwd_numpy_debug_print(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    if not isinstance(bwd, ast.FunctionDef) or bwd.args.vararg or len(param_names(bwd)) != len(d.nondiff) + 2:
        return None
    g = param_names(bwd)[-1]
    at = _docstring_at(bwd)
    bwd.body[at:at] = stmt(f"print('{bwd.name}: max |g| =', max((float(numpy.abs(numpy.asarray(_c)).max()) "
                           f"for _c in jax.tree_util.tree_leaves({g}))))")
    _ensure_import(tree, "numpy")
    _ensure_import(tree, "jax")
    return "bwd"


@heldout7_mutation("fwd_residual_to_host", "E40 in fwd (TracerArrayConversionError under jit; an object residual otherwise): fwd moves its first residual to host memory with `numpy.asarray(...)` to save accelerator memory")
def _fwd_residual_to_host(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        res = r.elts[1]
        if isinstance(res, (ast.Tuple, ast.List)):
            idx = [i for i, e in enumerate(res.elts) if not isinstance(e, ast.Constant)]
            if not idx:
                continue
            res.elts[idx[0]] = ast.Call(func=expr("numpy.asarray"), args=[res.elts[idx[0]]], keywords=[])
        elif isinstance(res, ast.Constant):
            continue
        else:
            r.elts[1] = ast.Call(func=expr("numpy.asarray"), args=[res], keywords=[])
        done = True
    if not done:
        return None
    _ensure_import(tree, "numpy")
    return "fwd"


@heldout7_mutation("jvp_tangent_numpy", "E40 in the jvp rule (TracerArrayConversionError: under grad the tangent is always a tracer): the rule returns its (first) tangent output through `numpy.asarray(...)`, a NumPy habit (eager jax.jvp on concrete tangents runs)")
def _jvp_tangent_numpy(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    out = _edit_tangent(tree, d, lambda n: ast.Call(func=expr("numpy.asarray"), args=[n], keywords=[]))
    if out:
        _ensure_import(tree, "numpy")
    return out


_INPUT_GUARD = ("if not all((jnp.all(jnp.isfinite(_x)) for _x in jax.tree_util.tree_leaves({name}))):\n"
                "    raise ValueError('non-finite {what} in {rule}')\n")


@heldout7_mutation("fwd_input_guard", "E39's route through a primal (TracerBoolConversionError, core.py): fwd starts with an input validation, a Python `if` on its first differentiated input (`if not all(jnp.all(jnp.isfinite(x)) ...): raise ValueError`); eager grad runs it on concrete values, jit traces it")
def _fwd_input_guard(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd = d.rules.get("fwd")
    if not isinstance(fwd, ast.FunctionDef) or fwd.args.vararg or len(param_names(fwd)) != len(d.params) or not d.diff_positions:
        return None
    name = param_names(fwd)[d.diff_positions[0]]
    at = _docstring_at(fwd)
    fwd.body[at:at] = stmt(_INPUT_GUARD.format(name=name, what="input", rule=fwd.name))
    _ensure_import(tree, "jax")
    return "fwd"


@heldout7_mutation("jvp_primal_guard", "E39's route through the primals (TracerBoolConversionError): the jvp rule starts with an input validation on its primals (`if not all(jnp.all(jnp.isfinite(p)) for p in tree_leaves(primals)): raise ValueError`); eager grad and jvp pass concrete primals, jit traces them")
def _jvp_primal_guard(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    if not isinstance(rule, ast.FunctionDef) or rule.args.vararg or len(param_names(rule)) != len(d.nondiff) + 2:
        return None
    primals = param_names(rule)[-2]
    at = _docstring_at(rule)
    rule.body[at:at] = stmt(_INPUT_GUARD.format(name=primals, what="input", rule=rule.name))
    _ensure_import(tree, "jax")
    return "jvp"


@heldout7_mutation("bwd_ct_namedtuple", "E18 by container (`Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args tuple`): bwd returns its cotangents in a `collections.namedtuple` named after the differentiated parameters (a NamedTuple is a tuple to isinstance, another pytree node to tree_structure)")
def _bwd_ct_namedtuple(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    names = [d.params[i] for i in d.diff_positions] if d.params else []
    if not names or len(set(names)) != len(names) or any(n.startswith("_") for n in names):
        return None
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if isinstance(r, ast.Tuple) and len(r.elts) == len(names):
            replace(tree, r, ast.Call(func=ast.Name("_Grads", ast.Load()), args=list(r.elts), keywords=[]))
            done = True
    if not done:
        return None
    _ensure_import(tree, "collections")
    _after_imports(tree, stmt(f"_Grads = collections.namedtuple('_Grads', {names!r})"))
    return "bwd"


@heldout7_mutation("nondiff_argnums_as_names", "E45's route (the positions looked up at every call: custom_derivatives.py:284 / :721 pass nondiff_argnums to debug_info, whose bounds check, api_util.py:233 `_ensure_inbounds`, compares each with the argument count: `TypeError: '>=' not supported between instances of 'str' and 'int'` at the first call): nondiff_argnums given the parameters' names, `('func', 'max_iter')`, the argnames spelling under the argnums keyword")
def _nondiff_argnums_as_names(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    kw = _nondiff_keyword(d)
    if kw is None or not kw.value.elts:
        return None
    try:
        idx = [ast.literal_eval(e) for e in kw.value.elts]
    except ValueError:
        return None
    if not all(isinstance(i, int) and 0 <= i < len(d.params) for i in idx):
        return None
    kw.value = ast.Tuple([ast.Constant(d.params[i]) for i in idx], ast.Load())
    return "creator"


@heldout7_mutation("checkpoint_over_creator", "E63 (`'function' object has no attribute 'defvjp'` / `'defjvp'`, at the registration): `@jax.checkpoint` stacked above the creator to save memory (`f = jax.checkpoint(jax.custom_vjp(g))` in call form); the name is then the remat wrapper")
def _checkpoint_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i, expr("jax.checkpoint"))
    elif d.creator_stmt is not None:
        d.creator_stmt.value = ast.Call(func=expr("jax.checkpoint"), args=[d.creator], keywords=[])
    else:
        return None
    _ensure_import(tree, "jax")
    return "creator"


@heldout7_mutation("checkpoint_under_creator", "E65's route through remat (`jax.checkpoint` traces every argument it is given, so a callable or a Python option in a nondiff slot is not a valid JAX type; arrays pass, look-alike there): the primal rematerialised with `@jax.checkpoint` beneath the creator")
def _checkpoint_under_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i + 1, expr("jax.checkpoint"))
    elif d.creator_style == "call" and d.creator.args:
        d.creator.args[0] = ast.Call(func=expr("jax.checkpoint"), args=[d.creator.args[0]], keywords=[])
    else:
        return None
    _ensure_import(tree, "jax")
    return "primal"


@heldout7_mutation("remat_hvp_caller", "E27 (ValueError `Linearization failed to produce known values for all output primals`, ad.py:986): `optimize_remat=True` added to defvjp to save memory, in a model whose optimiser takes reverse-over-reverse Hessian-vector products (`grad` of the summed `grad`), which the caller does")
def _remat_hvp_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if d.method != "defvjp" or not argnums or _reg_keyword(tree, d, "optimize_remat") is None:
        return None
    body = ("    def loss(*a):\n"
            "        return jnp.sum(eval_fn(*a))\n"
            "    def slope(*a):\n"
            f"        return sum((jnp.sum(g) for g in jax.grad(loss, argnums={argnums!r})(*a)))\n"
            f"    return jax.grad(slope, argnums={argnums!r})(*args)")
    _caller(tree, "remat_hvp_usage", body, None)
    _ensure_import(tree, "jax")
    return "registration"


@heldout7_mutation("grad_nonscalar_caller", "E43 (`Gradient only defined for scalar-output functions`, api.py `_check_scalar`): a caller differentiates the function itself with jax.grad, without reducing its output to a scalar (look-alike where the output is a scalar)")
def _grad_nonscalar_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    return _caller_pair(tree, "grad_direct_usage", f"    return jax.grad(eval_fn, argnums={argnums!r})(*args)",
                        _grad_body(argnums))


@heldout7_mutation("primal_out_list", "E16 / E06 (the fwd or jvp rule's primal output has another structure than the primal's: checked when the primal is staged, `grad(jit(f))`; the list is the output otherwise): the primal's output tuple written as a list")
def _primal_out_list(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in returns(d.primal):
        if isinstance(r, ast.Tuple) and len(r.elts) >= 2:
            replace(tree, r, ast.List(list(r.elts), ast.Load()))
            done = True
    return "primal" if done else None


@heldout7_mutation("bwd_ct_clip_tree_map", "E18 / E19, look-alike expected: bwd clips its cotangents with `jax.tree_util.tree_map(lambda c: jnp.clip(c, -1e3, 1e3), (...))` over the returned tuple (tree_map keeps the tuple and its None entries, so the structure is unchanged)")
def _bwd_ct_clip_tree_map(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if isinstance(r, ast.Tuple):
            call = expr("jax.tree_util.tree_map(lambda _c: jnp.clip(_c, -1000.0, 1000.0), _x)")
            call.args[1] = copy.copy(r)
            replace(tree, r, call)
            done = True
    if not done:
        return None
    _ensure_import(tree, "jax")
    return "bwd"


@heldout7_mutation("value_and_grad_aux_caller", "the reverse-mode checks (E15-E20) through value_and_grad(has_aux=True), look-alike expected: a caller takes the loss and its gradient together, keeping the output as auxiliary data")
def _value_and_grad_aux_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = ("    def loss_aux(*a):\n"
            "        out = eval_fn(*a)\n"
            "        return jnp.sum(out), out\n"
            f"    (value, out), g = jax.value_and_grad(loss_aux, argnums={argnums!r}, has_aux=True)(*args)\n"
            "    return tuple(g) + (value,)")
    expected = (f"    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r})(*args)\n"
                "    return tuple(g) + (jnp.sum(eval_fn(*args)),)")
    return _caller_pair(tree, "value_and_grad_aux_usage", body, expected)


@heldout7_mutation("lax_map_caller", "the rules under grad inside lax.map (a scan body: partial eval of the custom rule per step), look-alike expected: a caller maps the gradient over three scaled inputs with lax.map")
def _lax_map_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    grad = (f"    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])))\n"
            f"    x = jnp.asarray(args[{p!r}])\n")
    body = grad + "    return jax.lax.map(g, jnp.stack([x, x * 0.9, x * 1.1]))"
    expected = grad + "    return jnp.stack([g(x), g(x * 0.9), g(x * 1.1)])"
    return _caller_pair(tree, "lax_map_usage", body, expected)


@heldout7_mutation("pmap_caller", "the rules under pmap (data-parallel training: the custom rules traced for a mapped computation), look-alike expected: a caller pmaps the gradient over a leading device axis of size 1")
def _pmap_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    grad = (f"    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])))\n"
            f"    x = jnp.asarray(args[{p!r}])\n")
    return _caller_pair(tree, "pmap_usage", grad + "    return jax.pmap(g)(x[None])[0]", grad + "    return g(x)")



# ----------------------------------------------------------------------------- heldout8 operators
#
# Written for the eighth held-out set (2026-12-07, blind to vjplint's rules), each drawn from a row
# of the census of JAX 0.10.2's checks about custom derivatives (E-numbers; every row of
# heldout8/OPERATORS.md names its row): `jax.named_call` above (E63) or beneath (E65) the creator,
# a forward-over-reverse Hessian-vector product (E24), an integer input to grad (E42), a one-sided
# kink term `abs(tangent)` in a jvp rule (E31), a cotangent norm logged to a module-level list
# (E37), fwd or bwd written without the nondiff parameters (E47, E46), `jnp.atleast_1d` on a
# cotangent or a tangent (E20, E08), fwd's pair as a dict (E15) or a NamedTuple (E15, look-alike
# expected), `symbolic_zeros=True` with fwd unwrapping its primals (E28 / E29 / E30), a `**options`
# parameter on the primal passed by the caller (E13), the registration moved under
# `if __name__ == '__main__':` (E12 / E02), `jax.closure_convert` dropped (E22), and new callers
# (`lax.fori_loop` gradient steps, `shard_map` over one device). They apply to heldout8's bases only (`ONLY_SETS`); the
# older operators apply to heldout8 on a fixed share of the pairs (`SAMPLED_SETS`, `SAMPLE_EVERY`).


def heldout8_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout8", "heldout9", "heldout10", "heldout11")  # heldout9 ... heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


@heldout8_mutation("named_call_over_creator", "E63 (`'function' object has no attribute 'defvjp'` / `'defjvp'`, at the registration): `@jax.named_call` stacked above the creator to name the op in profiles (`f = jax.named_call(jax.custom_vjp(g))` in call form); the name is then the named wrapper")
def _named_call_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i, expr("jax.named_call"))
    elif d.creator_stmt is not None:
        d.creator_stmt.value = ast.Call(func=expr("jax.named_call"), args=[d.creator], keywords=[])
    else:
        return None
    _ensure_import(tree, "jax")
    return "creator"


@heldout8_mutation("named_call_under_creator", "E65's route through a profiling wrapper (a transformation beneath the creator receives the nondiff arguments too; look-alike expected where it does not trace them): the primal wrapped with `@jax.named_call` beneath the creator")
def _named_call_under_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i + 1, expr("jax.named_call"))
    elif d.creator_style == "call" and d.creator.args:
        d.creator.args[0] = ast.Call(func=expr("jax.named_call"), args=[d.creator.args[0]], keywords=[])
    else:
        return None
    _ensure_import(tree, "jax")
    return "primal"


@heldout8_mutation("hvp_fwd_over_rev_caller", "E24's route (`can't apply forward-mode autodiff (jvp) to a custom_vjp function`, ad.py:1297): a caller takes a Hessian-vector product forward-over-reverse, `jax.jvp(jax.grad(loss), (x,), (v,))`, the form JAX's autodiff cookbook recommends (a custom_jvp's rule is differentiated again)")
def _hvp_fwd_over_rev_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    body = (f"    def loss(v):\n"
            f"        return jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)]))\n"
            f"    x = jnp.asarray(args[{p!r}])\n"
            "    _, hv = jax.jvp(jax.grad(loss), (x,), (jnp.ones_like(x),))\n"
            "    return hv")
    _caller(tree, "hvp_usage", body, None)
    _ensure_import(tree, "jax")
    return "caller"


@heldout8_mutation("caller_int_input", "E42 (`grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but got int32`, api.py `_check_input_dtype_revderiv`): the caller's differentiated input arrives as integer counts (`jnp.asarray(x, jnp.int32)`, read from a table of integers)")
def _caller_int_input(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    body = (f"    a = list(args)\n"
            f"    a[{p!r}] = jnp.asarray(jnp.round(jnp.asarray(a[{p!r}]) * 10.0), jnp.int32)\n"
            f"    return jax.grad(lambda *b: jnp.sum(eval_fn(*b)), argnums={argnums!r})(*a)")
    _caller(tree, "int_input_usage", body, None)
    _ensure_import(tree, "jax")
    return "caller"


@heldout8_mutation("jvp_kink_abs_tangent", "E31 (`Transpose rule (for reverse-mode differentiation) for 'abs' not implemented`, ad.py:353): the jvp rule adds the one-sided derivative at a kink to its first input tangent where it is first used, `t` becoming `t + jnp.where(p == 0, jnp.abs(t), 0.0)` (p its primal: the directional derivative of |x| at 0, not linear in the tangent); zero at the inputs, but reverse mode must transpose `abs`")
def _jvp_kink_abs_tangent(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule, names = _tangent_names(d)
    if not isinstance(rule, ast.FunctionDef) or not names:
        return None
    primals = unpacking(rule, param_names(rule)[-2])
    pnames = [e.id for e in primals.targets[0].elts if isinstance(e, ast.Name)] if primals is not None else []
    if len(pnames) != len(names):
        return None
    skip = {id(x) for n in ast.walk(rule) if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Subscript))
            for x in ast.walk(n.value)}
    for n in ast.walk(rule):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == names[0] and id(n) not in skip:
            replace(tree, n, expr(f"({n.id} + jnp.where({pnames[0]} == 0, jnp.abs({n.id}), 0.0))"))
            return "jvp"
    return None


@heldout8_mutation("bwd_grad_norm_log", "E37 (`UnexpectedTracerError: Encountered an unexpected tracer`, core.py `check_eval_args` / escaped tracer): bwd appends the norm of its cotangent to a module-level list for monitoring, and the training loop reads the latest entry after a jitted gradient step")
def _bwd_grad_norm_log(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    argnums = tuple(meta.get("argnums", ()))
    if not isinstance(bwd, ast.FunctionDef) or bwd.args.vararg or len(param_names(bwd)) != len(d.nondiff) + 2 or not argnums:
        return None
    g = param_names(bwd)[-1]
    at = _docstring_at(bwd)
    bwd.body[at:at] = stmt(f"_GRAD_NORMS.append(sum((jnp.sum(jnp.square(_c)) for _c in jax.tree_util.tree_leaves({g}))))")
    _ensure_import(tree, "jax")
    _after_imports(tree, stmt("_GRAD_NORMS = []"))
    body = (f"    g = jax.jit(jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r}))(*args)\n"
            "    return tuple(g) + (jnp.sqrt(_GRAD_NORMS[-1]),)")
    _caller(tree, "grad_norm_usage", body, None)
    return "bwd"


@heldout8_mutation("fwd_drops_nondiff", "E47 (`f_fwd() takes N positional arguments but M were given`, cd.py `_flatten_fwd`): fwd written without the nondiff_argnums parameters (the user thinks only bwd receives them), its body unchanged")
def _fwd_drops_nondiff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd = d.rules.get("fwd")
    nd = d.nondiff
    if not isinstance(fwd, ast.FunctionDef) or not nd or fwd.args.vararg or len(param_names(fwd)) != len(d.params):
        return None
    names = param_names(fwd)
    set_params(fwd, [n for i, n in enumerate(names) if i not in nd])
    return "fwd"


@heldout8_mutation("bwd_drops_nondiff", "E46 (`f_bwd() takes 2 positional arguments but N were given`, cd.py `_flatten_bwd`): bwd written as `(res, g)` without the nondiff_argnums parameters JAX passes first (the nondiff values thought to come through the residuals)")
def _bwd_drops_nondiff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    k = len(d.nondiff)
    if not isinstance(bwd, ast.FunctionDef) or not k or bwd.args.vararg or len(param_names(bwd)) != k + 2:
        return None
    set_params(bwd, param_names(bwd)[k:])
    return "bwd"


def _atleast_1d(n: ast.expr) -> ast.expr:
    call = expr("jnp.atleast_1d(_x)")
    call.args[0] = n
    return call


@heldout8_mutation("bwd_ct_atleast_1d", "E20 (`Custom VJP bwd rule must produce an output with the same type as the args tuple`, cd.py:998) for a scalar input: bwd returns its first cotangent through `jnp.atleast_1d(...)` (\"make sure it is an array\"); a no-op for an input of rank >= 1 (look-alike there)")
def _bwd_ct_atleast_1d(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _edit_first_ct(tree, d, _atleast_1d)


@heldout8_mutation("jvp_tangent_atleast_1d", "E08 (`Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes`, cd.py:395) for a scalar output: the jvp rule returns its (first) tangent output through `jnp.atleast_1d(...)`; a no-op for an output of rank >= 1 (look-alike there)")
def _jvp_tangent_atleast_1d(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    dicts = {t.id for n in ast.walk(rule) if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Dict, ast.DictComp))
             for t in n.targets if isinstance(t, ast.Name)} if isinstance(rule, ast.FunctionDef) else set()
    if any(isinstance(r.elts[1], (ast.Dict, ast.DictComp)) or isinstance(r.elts[1], ast.Name) and r.elts[1].id in dicts
           for r in _rule_pairs(rule)):
        return None  # a dict of tangents: atleast_1d of the dict is an error of the edit, not the check's
    return _edit_tangent(tree, d, _atleast_1d)


@heldout8_mutation("fwd_pair_as_dict", "E15 (`Custom VJP fwd rule ... must produce a pair (list or tuple of length two)`, cd.py:880): fwd returns its output and residuals as a dict, `{'out': ..., 'res': ...}`, for readability")
def _fwd_pair_as_dict(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        replace(tree, r, ast.Dict(keys=[ast.Constant("out"), ast.Constant("res")], values=list(r.elts)))
        done = True
    return "fwd" if done else None


@heldout8_mutation("fwd_pair_namedtuple", "E15's check (cd.py:880 `isinstance(pair_out, (list, tuple)) and len(pair_out) == 2`), look-alike expected: fwd returns its pair as a `collections.namedtuple('FwdOut', ['out', 'res'])` (a NamedTuple is a 2-tuple to that check)")
def _fwd_pair_namedtuple(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(d.rules.get("fwd")):
        replace(tree, r, ast.Call(func=ast.Name("_FwdOut", ast.Load()), args=list(r.elts), keywords=[]))
        done = True
    if not done:
        return None
    _ensure_import(tree, "collections")
    _after_imports(tree, stmt("_FwdOut = collections.namedtuple('_FwdOut', ['out', 'res'])"))
    return "fwd"


@heldout8_mutation("symbolic_zeros_unwrapped", "E28 / E29 / E30 (symbolic zeros: fwd receives `CustomVJPPrimal` objects, bwd may receive `SymbolicZero` cotangents): `symbolic_zeros=True` added to defvjp and fwd unwraps its differentiated primals with `jax.custom_derivatives.custom_vjp_primal_tree_values(...)` as the docs show, bwd unchanged (look-alike expected where every output cotangent is nonzero)")
def _symbolic_zeros_unwrapped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd = d.rules.get("fwd")
    if d.method != "defvjp" or not isinstance(fwd, ast.FunctionDef) or fwd.args.vararg \
            or len(param_names(fwd)) != len(d.params) or not d.diff_positions:
        return None
    if _reg_keyword(tree, d, "symbolic_zeros") is None:
        return None
    names = [param_names(fwd)[i] for i in d.diff_positions]
    target = ", ".join(names) + ("," if len(names) == 1 else "")
    at = _docstring_at(fwd)
    fwd.body[at:at] = stmt(f"{target} = jax.custom_derivatives.custom_vjp_primal_tree_values(({target}))")
    _ensure_import(tree, "jax")
    return "fwd"


@heldout8_mutation("primal_var_keywords", "E13 / E03 (`The input arguments to the custom_vjp-decorated function ... could not be resolved to positional-only arguments`, cd.py:729 / :293): the primal gains `**options` to forward solver options, and the caller passes one (`verbose=False`)")
def _primal_var_keywords(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef) or d.primal.args.kwarg is not None:
        return None
    calls = _uses_of(tree, d)
    ev = _eval_fn(tree)
    if not calls or ev is None:
        return None
    in_eval = [c for c in calls if any(c is n for n in ast.walk(ev))]
    if not in_eval:
        return None
    if any(k.arg == "verbose" for c in in_eval for k in c.keywords):
        return None  # the caller passes `verbose=` already: a second one does not parse
    d.primal.args.kwarg = ast.arg("options")
    for c in in_eval:
        c.keywords.append(ast.keyword("verbose", ast.Constant(False)))
    return "primal"


@heldout8_mutation("registration_in_main_guard", "E12 / E02 (`No VJP defined for custom_vjp function ... using defvjp.` / `No JVP defined ...`, cd.py:724 / :288, at the first call): the module-level registration moved into the script block, `if __name__ == '__main__':` at the end of the module (with a smoke test), so a module that imports the definition never registers the rules")
def _registration_in_main_guard(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.reg_stmt is None or not any(s is d.reg_stmt for s in tree.body):
        return None
    tree.body.remove(d.reg_stmt)
    guard = stmt("if __name__ == '__main__':\n    pass\n")[0]
    guard.body = [d.reg_stmt] + stmt("print(eval_fn(*eval_inputs()))")
    tree.body.append(guard)
    return "registration"


@heldout8_mutation("closure_convert_removed", "E22 (`Detected differentiation of a custom_vjp function with respect to a closed-over value`, cd.py:1053 / ad.py:1323; silently no gradient for the closed-over value where it is not staged): the `jax.closure_convert(f, *example)` call dropped as redundant, `f` passed on with no hoisted arguments (`converted, consts = f, ()`), so the custom function closes over the differentiated parameters again")
def _closure_convert_removed(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and dotted(n.value.func).endswith("closure_convert") \
                and n.value.args and len(n.targets) == 1 and isinstance(n.targets[0], (ast.Tuple, ast.List)) \
                and len(n.targets[0].elts) == 2:
            n.value = ast.Tuple([n.value.args[0], ast.Tuple([], ast.Load())], ast.Load())
            done = True
    return "caller" if done else None


@heldout8_mutation("fori_loop_caller", "the reverse-mode checks (E15-E20) inside a `lax.fori_loop` body, look-alike expected: a caller takes three gradient-descent steps on its first differentiated input with `jax.lax.fori_loop`")
def _fori_loop_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    grad = (f"    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])))\n"
            f"    x = jnp.asarray(args[{p!r}])\n")
    body = grad + "    return jax.lax.fori_loop(0, 3, lambda i, v: v - 0.01 * g(v), x)"
    expected = grad + ("    for _ in range(3):\n"
                       "        x = x - 0.01 * g(x)\n"
                       "    return x")
    return _caller_pair(tree, "fori_loop_usage", body, expected)


@heldout8_mutation("shard_map_caller", "the rules under `jax.shard_map` (data-parallel training over a mesh: the custom rules traced per shard), look-alike expected: a caller computes the gradient inside `shard_map` over a one-device mesh with replicated specs")
def _shard_map_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    grad = (f"    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])))\n"
            f"    x = jnp.asarray(args[{p!r}])\n")
    body = grad + ("    mesh = jax.make_mesh((1,), ('data',))\n"
                   "    spec = jax.sharding.PartitionSpec()\n"
                   "    return jax.shard_map(g, mesh=mesh, in_specs=spec, out_specs=spec)(x)")
    return _caller_pair(tree, "shard_map_usage", body, grad + "    return g(x)")



# ----------------------------------------------------------------------------- heldout9 operators
#
# Written for the ninth held-out set (2026-12-07, blind to vjplint's rules), each drawn from a row
# of the census of JAX 0.10.2's checks about custom derivatives (E-numbers; every row of
# heldout9/OPERATORS.md names its row): fwd saving the input's dtype or shape beside its residuals
# to restore the cotangent (E64), the jvp rule's pair as a dict (E04), a zero cotangent made like
# the output cotangent (E20), a broadcast sum forgotten in bwd (E20), a `jnp.where` written as a
# Python conditional expression in a rule (E39), `math` functions in a rule (E40's route through
# `__float__`), `static_argnums` written for `nondiff_argnums` (the creator's signature, E44's
# site), a Hessian-vector product by `jax.linearize` of the gradient (E24), a cotangent computed on
# the host with `jax.pure_callback` (E35), the primal logging through an ordered `io_callback`
# (E34), `jax.profiler.annotate_function` above the creator (E63), bwd returning a generator
# (E18), and two new callers (`lax.while_loop` gradient steps, `lax.switch`). They apply to
# heldout9's bases only (`ONLY_SETS`); the older operators apply to heldout9 on a fixed share of
# the pairs (`SAMPLED_SETS`, `SAMPLE_EVERY`).


def heldout9_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout9", "heldout10", "heldout11")  # heldout10 and heldout11 (2026-12-07/08) are mutated by them too
    return mutation(name, doc)


def _fwd_first_diff(d: Deriv) -> Optional[Tuple[ast.FunctionDef, str]]:
    """fwd (a `def` taking the primal's parameters) and its name for the first differentiated one."""
    fwd = d.rules.get("fwd")
    if not isinstance(fwd, ast.FunctionDef) or fwd.args.vararg or len(param_names(fwd)) != len(d.params) \
            or not d.diff_positions:
        return None
    return fwd, param_names(fwd)[d.diff_positions[0]]


def _residual_extra(tree: ast.Module, d: Deriv, saved: str, name: str, make: Callable[[str, ast.expr], ast.expr]) -> Optional[str]:
    """fwd saves `saved` (an expression of its first differentiated parameter, `{x}`) beside its
    residuals, bwd unpacks it as `name` first thing and passes its first cotangent through `make`."""
    got, first = _bwd_res_param(d), _fwd_first_diff(d)
    pairs = _rule_pairs(d.rules.get("fwd"))
    if got is None or first is None or not pairs or not _first_ct(d):
        return None
    bwd, res = got
    for r in pairs:
        r.elts[1] = ast.Tuple([r.elts[1], expr(saved.format(x=first[1]))], ast.Load())
    at = _docstring_at(bwd)
    bwd.body.insert(at, stmt(f"{res}, {name} = {res}")[0])
    _edit_first_ct(tree, d, lambda n: make(name, n))
    return "fwd"


def _call_with(template: str, n: ast.expr) -> ast.expr:
    call = expr(template)
    call.args[0] = n
    return call


@heldout9_mutation("residual_input_dtype", "E64 (`Argument ... of type <class 'numpy.dtype...'> is not a valid JAX type`, the residuals flattened at cd.py:883 and abstractified): fwd saves the input's dtype, `jnp.result_type(x)`, beside its residuals so that bwd can cast its first cotangent back to it (mixed precision)")
def _residual_input_dtype(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _residual_extra(tree, d, "jnp.result_type({x})", "_in_dtype",
                           lambda name, n: _call_with(f"jnp.asarray(_x, dtype={name})", n))


@heldout9_mutation("residual_input_shape", "E64's route with a shape, look-alike expected (a tuple of Python ints among the residuals stays usable as a shape in bwd on JAX 0.10.2, unlike a dtype): fwd saves `jnp.shape(x)` beside its residuals, bwd reshapes its first cotangent to it")
def _residual_input_shape(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    return _residual_extra(tree, d, "jnp.shape({x})", "_in_shape",
                           lambda name, n: _call_with(f"jnp.reshape(_x, {name})", n))


@heldout9_mutation("jvp_pair_as_dict", "E04 (`Custom JVP rule ... must produce a pair (list or tuple of length two) representing primal and tangent outputs`, cd.py:339): the jvp rule returns its two outputs as a dict, `{'primal': ..., 'tangent': ...}`, for readability")
def _jvp_pair_as_dict(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in _rule_pairs(jvp_rule(d)):
        replace(tree, r, ast.Dict(keys=[ast.Constant("primal"), ast.Constant("tangent")], values=list(r.elts)))
        done = True
    return "jvp" if done else None


@heldout9_mutation("bwd_zero_like_output", "E20 (`Custom VJP bwd rule must produce an output with the same type as the args tuple`, cd.py:998) where the output's shape is not the input's: bwd's None for an input (no gradient) written as an explicit zero, `jnp.zeros_like(g)`, taken like the output cotangent rather than the input")
def _bwd_zero_like_output(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    if bwd is None or bwd.args.vararg or not param_names(bwd):
        return None
    g = param_names(bwd)[-1]
    done = False
    for r in tuple_returns(bwd):
        for i, e in enumerate(r.elts):
            if is_none(e):
                r.elts[i] = expr(f"jnp.zeros_like({g})")
                done = True
    return "bwd" if done else None


def _sum_operand(n: ast.expr) -> Optional[ast.expr]:
    """The summed array of `jnp.sum(a, ...)` / `np.sum(a, ...)` / `a.sum(...)`."""
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "sum":
        if dotted(n.func) in ("jnp.sum", "np.sum", "numpy.sum", "jax.numpy.sum"):
            return n.args[0] if n.args else None
        if not dotted(n.func.value) in ("jnp", "np", "numpy", "jax.numpy"):
            return n.func.value
    return None


@heldout9_mutation("bwd_ct_unreduced", "E20 (`Custom VJP bwd rule must produce an output with the same type as the args tuple`, cd.py:998), or silently wrong where the shapes agree: bwd forgets the sum that reduces a cotangent to its input's shape (a broadcast parameter), `jnp.sum(g * x, axis=...)` becoming `g * x`")
def _bwd_ct_unreduced(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    if not isinstance(bwd, (ast.FunctionDef, ast.Lambda)):
        return None
    returned = [e for r in tuple_returns(bwd) for e in r.elts]
    names = {e.id for e in returned if isinstance(e, ast.Name)}
    for e in returned:
        inner = _sum_operand(e)
        if inner is not None:
            replace(tree, e, inner)
            return "bwd"
    if isinstance(bwd, ast.FunctionDef):
        for n in ast.walk(bwd):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and n.targets[0].id in names and _sum_operand(n.value) is not None:
                n.value = _sum_operand(n.value)
                return "bwd"
    return None


def _rules_of(tree: ast.Module, d: Deriv) -> List[Fn]:
    """The rules, then the module-level helpers they call by name (where the arithmetic often lives)."""
    rules = [f for f in (d.rules.get("bwd"), d.rules.get("jvp"), d.rules.get("fwd")) if f is not None] + \
        [f for f in d.defjvps if f is not None]
    module = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    helpers: List[Fn] = []
    for rule in rules:
        for n in ast.walk(rule):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in module \
                    and n.func.id not in (d.name, getattr(d.primal, "name", None)) \
                    and all(module[n.func.id] is not h for h in rules + helpers):
                helpers.append(module[n.func.id])
    return rules + helpers


@heldout9_mutation("rule_where_to_ifexp", "E39 (`TracerBoolConversionError: Attempted boolean conversion of traced array`, core.py): the first `jnp.where(c, a, b)` of a rule (or of a module-level helper a rule calls) rewritten as the Python conditional expression `a if c else b` (scalar thinking; the rules are traced under grad and jit)")
def _rule_where_to_ifexp(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    parents = _parents(tree)
    for rule in _rules_of(tree, d):
        for n in ast.walk(rule):
            if isinstance(n, ast.Call) and dotted(n.func) in ("jnp.where", "jax.numpy.where", "np.where") \
                    and len(n.args) == 3 and not n.keywords and not isinstance(parents.get(n), ast.Attribute):
                replace(tree, n, ast.IfExp(test=n.args[0], body=n.args[1], orelse=n.args[2]))
                return "rule"
    return None


_MATH = ("exp", "log", "sqrt", "sin", "cos", "tanh", "log1p", "expm1", "cosh", "sinh")


@heldout9_mutation("rule_math_function", "E40's route through `__float__` (`ConcretizationTypeError` / `TypeError: only length-1 arrays can be converted to Python scalars`, core.py): the first `jnp.exp` / `jnp.log` / `jnp.sqrt` / ... of a rule (or of a module-level helper a rule calls) written with the `math` module, `math.exp(x)` (scalar-math habit)")
def _rule_math_function(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    for rule in _rules_of(tree, d):
        for n in ast.walk(rule):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MATH \
                    and dotted(n.func.value) in ("jnp", "jax.numpy") and len(n.args) == 1 and not n.keywords:
                n.func = expr(f"math.{n.func.attr}")
                _ensure_import(tree, "math")
                return "rule"
    return None


@heldout9_mutation("nondiff_as_static_argnums", "E44's check site (the creator's signature, cd.py: `TypeError: custom_vjp.__new__() got an unexpected keyword argument 'static_argnums'` at definition): `nondiff_argnums` written `static_argnums`, the name `jax.jit` uses")
def _nondiff_as_static_argnums(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for kw in d.keywords:
        if kw.arg == "nondiff_argnums":
            kw.arg = "static_argnums"
            done = True
    return "creator" if done else None


@heldout9_mutation("hvp_linearize_caller", "E24's route (`can't apply forward-mode autodiff (jvp) to a custom_vjp function`, ad.py:1297): a caller linearizes the gradient once, `jax.linearize(jax.grad(loss), x)`, to apply the Hessian to several vectors (a custom_jvp's rule is differentiated again)")
def _hvp_linearize_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    body = (f"    def loss(v):\n"
            f"        return jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)]))\n"
            f"    x = jnp.asarray(args[{p!r}])\n"
            "    _, hvp = jax.linearize(jax.grad(loss), x)\n"
            "    return hvp(jnp.ones_like(x))")
    _caller(tree, "hvp_linearize_usage", body, None)
    _ensure_import(tree, "jax")
    return "caller"


@heldout9_mutation("bwd_ct_pure_callback", "E35 (`vmap is only supported for the pure_callback primitive when vmap_method is one of ...`, callback.py's batching rule, under vmap of grad or jacrev): bwd computes its first cotangent on the host, `jax.pure_callback(numpy.asarray, jax.ShapeDtypeStruct(...), c)`, without `vmap_method`")
def _bwd_ct_pure_callback(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    def make(n: ast.expr) -> ast.expr:
        call = expr("_host_cotangent(_x)")
        call.args[0] = n
        return call
    if _edit_first_ct(tree, d, make) is None:
        return None
    _ensure_import(tree, "numpy")
    _ensure_import(tree, "jax")
    _after_imports(tree, stmt(
        "def _host_cotangent(c):\n"
        "    c = jnp.asarray(c)\n"
        "    return jax.pure_callback(lambda v: numpy.asarray(v), jax.ShapeDtypeStruct(c.shape, c.dtype), c)\n"))
    return "bwd"


@heldout9_mutation("primal_io_callback_log", "E34 (`ValueError: Cannot vmap ordered IO callback`, callback.py:477): the primal logs its first argument to the host with `jax.experimental.io_callback(..., ordered=True)` (an audit trail of the values it was called with)")
def _primal_io_callback_log(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef) or not d.params:
        return None
    x = d.params[d.diff_positions[0]] if d.diff_positions else d.params[0]
    at = _docstring_at(d.primal)
    d.primal.body[at:at] = stmt(f"jax.experimental.io_callback(_log_host, None, {x}, ordered=True)")
    _ensure_import(tree, "jax")
    _ensure_import(tree, "jax.experimental")
    _after_imports(tree, stmt("_HOST_LOG = []\n\n\ndef _log_host(value):\n    _HOST_LOG.append(value)\n"))
    return "primal"


@heldout9_mutation("annotate_over_creator", "E63 (`'function' object has no attribute 'defvjp'` / `'defjvp'`, at the registration): `@jax.profiler.annotate_function` stacked above the creator to see the op in a profile (`f = jax.profiler.annotate_function(jax.custom_vjp(g))` in call form); the name is then the annotating wrapper")
def _annotate_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i, expr("jax.profiler.annotate_function"))
    elif d.creator_stmt is not None:
        d.creator_stmt.value = ast.Call(func=expr("jax.profiler.annotate_function"), args=[d.creator], keywords=[])
    else:
        return None
    _ensure_import(tree, "jax")
    _ensure_import(tree, "jax.profiler")
    return "creator"


@heldout9_mutation("bwd_generator_return", "E18 (`Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args tuple`, cd.py:971): bwd returns its cotangents as a generator expression, `(c for c in (ct_x, ct_y))` (the `tuple(...)` around it forgotten)")
def _bwd_generator_return(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for r in tuple_returns(d.rules.get("bwd")):
        if isinstance(r, ast.Tuple) and r.elts:
            gen = expr("(_c for _c in _x)")
            gen.generators[0].iter = ast.Tuple(list(r.elts), ast.Load())
            replace(tree, r, gen)
            done = True
    return "bwd" if done else None


@heldout9_mutation("while_loop_caller", "the reverse-mode checks (E15-E20) inside a `lax.while_loop` body, look-alike expected: a caller takes gradient-descent steps on its first differentiated input (a pytree: `tree_map` over its leaves) in `jax.lax.while_loop` until a step counter reaches three")
def _while_loop_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    grad = (f"    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])))\n"
            f"    x = jax.tree_util.tree_map(jnp.asarray, args[{p!r}])\n"
            "    def descend(v):\n"
            "        return jax.tree_util.tree_map(lambda a, b: a - 0.001 * b, v, g(v))\n")
    body = grad + ("    def step(state):\n"
                   "        k, v = state\n"
                   "        return k + 1, descend(v)\n"
                   "    return jax.lax.while_loop(lambda state: state[0] < 3, step, (0, x))[1]")
    expected = grad + ("    for _ in range(3):\n"
                       "        x = descend(x)\n"
                       "    return x")
    return _caller_pair(tree, "while_loop_usage", body, expected)


@heldout9_mutation("switch_caller", "custom rules inside `lax.switch` under grad (partial eval and transpose of every branch), look-alike expected: a caller picks its loss, plain or scaled by two, with `jax.lax.switch` on a mode index and differentiates through it")
def _switch_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    loss = (f"    def loss(v):\n"
            f"        return jnp.sum(eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)]))\n"
            f"    x = jnp.asarray(args[{p!r}])\n")
    body = loss + ("    branches = [loss, lambda v: 2.0 * loss(v)]\n"
                   "    return jax.grad(lambda v: jax.lax.switch(1, branches, v))(x)")
    return _caller_pair(tree, "switch_usage", body, loss + "    return 2.0 * jax.grad(loss)(x)")



# ----------------------------------------------------------------------------- heldout10 operators
#
# Written for the tenth held-out set (2026-12-07, blind to vjplint's rules), each drawn from a row
# of the census of JAX 0.10.2's checks about custom derivatives (E-numbers; every row of
# heldout10/OPERATORS.md names its row). Four in a caller: a nondiff argument normalized with
# `jnp.asarray` at the call site (E14), a Jacobian by `vmap` of `jax.jvp` over a basis (E23), a
# host-side penalty through `jax.pure_callback` under `grad` (E33), a Hessian reverse-over-reverse
# (the rules differentiated by JAX). Six in the way the rule is made or registered: the creator
# swapped for `flax.nnx.custom_vjp` (E54) or equinox's `filter_custom_vjp` / `filter_custom_jvp`
# (E57-E59), `jnp.vectorize` above (E63) or beneath (E65's route) the creator, a table-driven
# registration loop (look-alike), the definition made per instance in a class's `__init__` on
# bound methods (E48's neighbour, look-alike). Three in the rules: a `jax.debug.callback` in bwd
# (E26), a `jax.debug.print` in the jvp rule (E10), `@jax.jit` on the rules (E65's route). They
# apply to heldout10's bases only (`ONLY_SETS`); the older operators apply to heldout10 on a fixed
# share of the pairs (`SAMPLED_SETS`, `SAMPLE_EVERY`).


def heldout10_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout10", "heldout11")  # heldout11 (2026-12-08) is mutated by them too
    return mutation(name, doc)


def _rule_functions(d: Deriv) -> List[ast.FunctionDef]:
    fns = [f for f in (d.rules.get("fwd"), d.rules.get("bwd"), d.rules.get("jvp")) if isinstance(f, ast.FunctionDef)]
    return fns + [f for f in d.defjvps if isinstance(f, ast.FunctionDef)]


def _calls_of(tree: ast.Module, d: Deriv) -> List[ast.Call]:
    """Calls `NAME(...)` of the custom function outside its own rules (the module's callers)."""
    inside = {id(n) for f in _rule_functions(d) for n in ast.walk(f)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id == d.name and id(n) not in inside]


@heldout10_mutation("caller_nondiff_asarray", "E14 (`UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a custom_vjp function in a position indicated by nondiff_argnums`, cd.py:853, under jit, where `jnp.asarray` of a constant is staged): a caller normalizes the value it passes in a nondiff_argnums position with `jnp.asarray(...)` before the call (an input-validation habit), which under a transformation makes it a tracer")
def _caller_nondiff_asarray(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not d.nondiff:
        return None
    module_defs = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    done = False
    for call in _calls_of(tree, d):
        if any(isinstance(a, ast.Starred) for a in call.args):
            continue
        for p in d.nondiff:
            node: Optional[ast.expr] = None
            if p < len(call.args):
                node = call.args[p]
            elif isinstance(d.primal, ast.FunctionDef) and p < len(d.params):
                node = next((k.value for k in call.keywords if k.arg == d.params[p]), None)
            if node is None or is_none(node) or isinstance(node, (ast.Lambda, ast.JoinedStr)) \
                    or isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)) \
                    or isinstance(node, ast.Name) and node.id in module_defs:
                continue
            replace(tree, node, ast.Call(func=expr("jnp.asarray"), args=[node], keywords=[]))
            done = True
    return "caller" if done else None


def _ravel_first(p: int) -> str:
    return (f"    x0, unravel = jax.flatten_util.ravel_pytree(args[{p!r}])\n"
            f"    def loss(v):\n"
            f"        return jnp.sum(eval_fn(*[unravel(v) if i == {p!r} else a for i, a in enumerate(args)]))\n")


@heldout10_mutation("vmap_jvp_jacobian_caller", "E23 (`can't apply forward-mode autodiff (jvp) to a custom_vjp function`, ad.py:1297) through `vmap` of `jax.jvp`: a caller builds the gradient of the summed output column by column, pushing the rows of an identity basis through `jax.jvp` under `jax.vmap` (the small-input Jacobian idiom); a custom_jvp's rule is batched over the basis")
def _vmap_jvp_jacobian_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    body = _ravel_first(p) + ("    basis = jnp.eye(x0.size, dtype=x0.dtype)\n"
                              "    return jax.vmap(lambda t: jax.jvp(loss, (x0,), (t,))[1])(basis)")
    expected = _ravel_first(p) + "    return jax.grad(loss)(x0)"
    _ensure_import(tree, "jax.flatten_util")
    return _caller_pair(tree, "jvp_basis_usage", body, expected)


@heldout10_mutation("host_penalty_grad_caller", "E33 (`ValueError: Pure callbacks do not support JVP. Please use jax.custom_jvp to use callbacks while taking gradients`, callback.py:117): a caller adds a penalty computed on the host by a NumPy function through `jax.pure_callback` to the summed output and differentiates the total with `jax.grad`, the callback wrapped in no custom rule")
def _host_penalty_grad_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    p = argnums[0]
    body = (f"    def loss(v):\n"
            f"        out = eval_fn(*[v if i == {p!r} else a for i, a in enumerate(args)])\n"
            f"        total = sum(jnp.sum(o) for o in jax.tree_util.tree_leaves(out))\n"
            f"        penalty = jax.pure_callback(_host_penalty, jax.ShapeDtypeStruct((), jnp.float32), total,\n"
            f"                                    vmap_method='sequential')\n"
            f"        return total + penalty\n"
            f"    return jax.grad(loss)(args[{p!r}])")
    _ensure_import(tree, "numpy")
    _ensure_import(tree, "jax")
    _after_imports(tree, stmt("def _host_penalty(total):\n"
                              "    return numpy.asarray(1e-3 * numpy.square(total), dtype=numpy.float32)\n"))
    return _caller(tree, "host_penalty_usage", body, None)


@heldout10_mutation("rev_over_rev_hessian_caller", "the reverse-mode checks (E15-E20) applied to the rules' own derivatives, look-alike expected where the rules are differentiable: a caller takes the Hessian reverse-over-reverse, `jax.jacrev(jax.jacrev(loss))`, to stay clear of forward mode (E23-E25), and applies it to ones (JAX differentiates fwd and bwd, or the jvp rule's linearization, again)")
def _rev_over_rev_hessian_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = _ravel_first(argnums[0]) + ("    hess = jax.jacrev(jax.jacrev(loss))(x0)\n"
                                       "    return hess @ jnp.ones_like(x0)")
    _ensure_import(tree, "jax.flatten_util")
    _ensure_import(tree, "jax")
    return _caller(tree, "rev_hessian_usage", body, None)


def _swap_creator(tree: ast.Module, d: Deriv, new: str) -> bool:
    """Replace the `custom_vjp` / `custom_jvp` reference inside the creator (a decorator, a
    `partial(...)` or a call) by the expression `new`."""
    node = next((n for n in ast.walk(d.creator) if isinstance(n, (ast.Name, ast.Attribute))
                 and dotted(n).rsplit(".", 1)[-1] in CREATORS), None)
    if node is None:
        return False
    if node is d.creator:
        i = _creator_decorator_index(d)
        if i is None:
            return False
        d.primal.decorator_list[i] = expr(new)
    else:
        replace(tree, node, expr(new))
    return True


@heldout10_mutation("creator_to_nnx", "E54 (the bwd of `flax.nnx.custom_vjp` receives `(input_updates_g, out_g)`, not the output cotangent: a TypeError or a wrong structure where it uses `g`; E52 / E53 on its nondiff_argnums): a migration to Flax NNX swaps `jax.custom_vjp` for `nnx.custom_vjp` in the creator (decorator, partial or call), keywords and rules unchanged")
def _creator_to_nnx(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.kind != "vjp" or not _swap_creator(tree, d, "nnx.custom_vjp"):
        return None
    _after_imports(tree, stmt("from flax import nnx"))
    return "creator"


@heldout10_mutation("creator_to_equinox_filter", "E57 / E58 / E59 (equinox's filter versions: `filter_custom_jvp.defjvps` raises NotImplementedError, `filter_custom_vjp` checks its bwd's structure, its `defvjp` is deprecated; neither takes `nondiff_argnums`, a TypeError at definition): a migration to Equinox swaps the creator for `eqx.filter_custom_vjp` / `eqx.filter_custom_jvp`, keywords, registration and rules unchanged")
def _creator_to_equinox_filter(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    new = "eqx.filter_custom_vjp" if d.kind == "vjp" else "eqx.filter_custom_jvp"
    if not _swap_creator(tree, d, new):
        return None
    _after_imports(tree, stmt("import equinox as eqx"))
    return "creator"


@heldout10_mutation("vectorize_over_creator", "E63 (`AttributeError: 'function' object has no attribute 'defvjp'` / `'defjvp'`, at the registration): `@jnp.vectorize` stacked above the creator so that the scalar kernel broadcasts over arrays (`f = jnp.vectorize(jax.custom_jvp(g))` in call form); the name is then the vectorized wrapper")
def _vectorize_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i, expr("jnp.vectorize"))
        return "creator"
    if d.creator_stmt is not None:
        d.creator_stmt.value = ast.Call(func=expr("jnp.vectorize"), args=[d.creator], keywords=[])
        return "creator"
    return None


@heldout10_mutation("vectorize_under_creator", "E65's route (a transformation beneath the creator receives every argument, nondiff ones too: `jnp.vectorize` turns each into an array, a callable or None is not a valid JAX type; look-alike for elementwise array-only primals, a changed value where the primal reduces over an axis): `@jnp.vectorize` put beneath the creator on the primal")
def _vectorize_under_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i + 1, expr("jnp.vectorize"))
        return "primal"
    if d.creator_style == "call" and d.creator.args:
        d.creator.args[0] = ast.Call(func=expr("jnp.vectorize"), args=[d.creator.args[0]], keywords=[])
        return "primal"
    return None


@heldout10_mutation("registration_table_loop", "E12 / E02's neighbour, look-alike expected (the registration still runs at import): the registration statement rewritten table-driven, `_RULES = {f: (f_fwd, f_bwd)}` and `for _fn, _rules in _RULES.items(): _fn.defvjp(*_rules)` (`defjvp` / `defjvps` alike), as a module registering several ops does")
def _registration_table_loop(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    call = d.registration
    if d.reg_stmt is None or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    body, i = body_of(tree, d.reg_stmt)
    table = ast.Dict(keys=[ast.Name(d.name, ast.Load())], values=[ast.Tuple(list(call.args), ast.Load())])
    kws = "".join(f", {k.arg}={ast.unparse(k.value)}" for k in call.keywords)
    new = stmt(f"_RULES = {ast.unparse(table)}\n"
               f"for _fn, _rules in _RULES.items():\n    _fn.{d.method}(*_rules{kws})\n")
    body[i:i + 1] = new
    return "registration"


@heldout10_mutation("creator_in_init", "E48's neighbour, look-alike expected (bound methods carry `self`, so positions and nondiff_argnums are those of the function): the definition made per instance in a class, `self.f = jax.custom_vjp(self._f, ...)` and `self.f.defvjp(self.f_fwd, self.f_bwd)` in `__init__`, the primal and rules methods taking `self`, the module name bound to `_FOp().f`")
def _creator_in_init(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    if not isinstance(d.primal, ast.FunctionDef) or d.reg_stmt is None:
        return None
    if d.creator_style == "decorator" and len(d.primal.decorator_list) != 1:
        return None
    stmts = _moved_definition(tree, d)
    if stmts is None:
        return None
    fns = [s for s in stmts if isinstance(s, ast.FunctionDef)]
    if any(f.decorator_list for f in fns if f is not d.primal):
        return None
    names = {f.name for f in fns}
    # a moved body that reads another moved function other than the custom one cannot see it any more
    for f in fns:
        for n in ast.walk(f):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names - {d.name}:
                return None
    if any(f.args.posonlyargs for f in fns):
        return None
    kind = "jax.custom_vjp" if d.kind == "vjp" else "jax.custom_jvp"
    primal_name = d.primal.name if d.primal.name != d.name else f"_{d.name.lstrip('_')}_impl"
    d.primal.decorator_list = []
    d.primal.name = primal_name
    for f in fns:
        f.args.args.insert(0, ast.arg("self"))
    reg = copy.deepcopy(d.registration)
    reg.func.value = expr(f"self.{d.name}")
    for i, a in enumerate(reg.args):
        if isinstance(a, ast.Name) and a.id in names:
            reg.args[i] = expr(f"self.{a.id}")
    creator = ast.Call(func=expr(kind), args=[expr(f"self.{primal_name}")], keywords=list(d.keywords))
    init = stmt(f"def __init__(self):\n    self.{d.name} = {ast.unparse(creator)}\n    {ast.unparse(reg)}\n")[0]
    cls = ast.ClassDef(name=f"_{d.name.lstrip('_')}_op", bases=[], keywords=[], body=[init] + fns, decorator_list=[],
                       type_params=[], lineno=0)
    at = tree.body.index(stmts[0])
    tree.body = [s for s in tree.body if not any(s is m for m in stmts)]
    tree.body[at:at] = [cls, ast.Assign([ast.Name(d.name, ast.Store())], expr(f"{cls.name}().{d.name}"), lineno=0)]
    _ensure_import(tree, "jax")
    return "definition"


@heldout10_mutation("bwd_debug_callback", "E26 (cd.py:1072, effects inside a custom_vjp: `jax.debug.callback` is an allowed effect, so look-alike expected): bwd starts by sending its output cotangent to a host-side monitor with `jax.debug.callback(_record_cotangent, g)`, which appends the norms to a module-level list")
def _bwd_debug_callback(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    bwd = d.rules.get("bwd")
    if not isinstance(bwd, ast.FunctionDef) or bwd.args.vararg or not param_names(bwd):
        return None
    g = param_names(bwd)[-1]
    at = _docstring_at(bwd)
    bwd.body[at:at] = stmt(f"jax.debug.callback(_record_cotangent, {g})")
    _ensure_import(tree, "jax")
    _ensure_import(tree, "numpy")
    _after_imports(tree, stmt("_COTANGENT_NORMS = []\n\n\n"
                              "def _record_cotangent(g):\n"
                              "    _COTANGENT_NORMS.append([float(numpy.linalg.norm(numpy.asarray(c, dtype=numpy.float64)))\n"
                              "                             for c in jax.tree_util.tree_leaves(g)])\n"))
    return "bwd"


@heldout10_mutation("jvp_debug_print", "E10 (cd.py:462, effects inside a custom_jvp: `jax.debug.print` is allowed, look-alike expected): the jvp rule starts with a debugging print of its input tangents' norms, `jax.debug.print('tangent norms: {}', [jnp.linalg.norm(t) for t in ...])`, the floating ones")
def _jvp_debug_print(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    rule = jvp_rule(d)
    if not isinstance(rule, ast.FunctionDef) or rule.args.vararg or len(param_names(rule)) < 2:
        return None
    t = param_names(rule)[-1]
    at = _docstring_at(rule)
    rule.body[at:at] = stmt(
        f"jax.debug.print('tangent norms: {{}}', [jnp.linalg.norm(_t) for _t in jax.tree_util.tree_leaves({t}) "
        f"if jnp.issubdtype(jnp.result_type(_t), jnp.inexact)])")
    _ensure_import(tree, "jax")
    return "jvp"


@heldout10_mutation("jit_on_rules", "E65's route through the rules (a jitted rule abstractifies every argument JAX passes it: a nondiff callable or option is `not a valid JAX type`, a residual shape becomes a tracer): `@jax.jit` put on the `def` rules (fwd and bwd, or the jvp rule, innermost under a registration decorator) to speed them up")
def _jit_on_rules(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    done = False
    for f in _rule_functions(d):
        if any(dotted(dec) == "jax.jit" for dec in f.decorator_list):
            continue
        f.decorator_list.append(expr("jax.jit"))
        done = True
    if done:
        _ensure_import(tree, "jax")
    return "rules" if done else None


# ----------------------------------------------------------------------------- heldout11 operators
#
# Written for the eleventh held-out set (2026-12-08, blind to vjplint's rules), each drawn from a
# row of the census of JAX 0.10.2's checks about custom derivatives (E-numbers; every row of
# heldout11/OPERATORS.md names its row). Four in a caller: the calls routed through a
# `jax.custom_batching.sequential_vmap` wrapper (E32), an input marked with equinox's
# `nondifferentiable` guard (E60), the inputs upcast to float64 with x64 enabled (E08 by dtype),
# the loss reduced with `keepdims=True` (E43). Six in the way the rule is made or registered:
# `@staticmethod` stacked above the creator in a class body (E63), the rules made methods of a
# class and registered through the class (E47 / E46), `sequential_vmap` beneath the creator (E65's
# route, E32's neighbour), bwd registered by a `functools.partial(f.defvjp, f_fwd)` decorator (E49's
# neighbour), `symbolic_zeros=True` through a module-level options dict (E29), a migration to
# `jax.custom_gradient` (E51). Three in the rules: fwd's or the jvp rule's primal output upcast to
# float64 with x64 enabled (E17, E07), the jvp rule's tangent clipped (E31). They apply to
# heldout11's bases only (`ONLY_SETS`); the older operators apply to heldout11 on a fixed share of
# the pairs (`SAMPLED_SETS`, `SAMPLE_EVERY`).


def heldout11_mutation(name: str, doc: str) -> Callable[[Op], Op]:
    ONLY_SETS[name] = ("heldout11",)
    return mutation(name, doc)


def _after_registration(tree: ast.Module, d: Deriv, statements: List[ast.stmt]) -> None:
    """Insert `statements` right after the registration (its statement, or the rule it decorates)."""
    anchor = d.reg_stmt if d.reg_stmt is not None else d.reg_decorated
    body, i = body_of(tree, anchor)
    body[i + 1:i + 1] = statements


@heldout11_mutation("caller_sequential_vmap", "E32 (`ValueError: Linearization failed to produce known values for all output primals`, ad.py:986: a `custom_vmap` function has no differentiation rule): the module wraps the custom function in `jax.custom_batching.sequential_vmap` (to loop over a batch instead of vectorizing it, for memory) and its callers call the wrapper")
def _caller_sequential_vmap(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    calls = _calls_of(tree, d)
    if not calls:
        return None
    wrapper = f"{d.name.rstrip('_')}_sequential"
    for call in calls:
        call.func = ast.Name(wrapper, ast.Load())
    _after_registration(tree, d, stmt(f"{wrapper} = jax.custom_batching.sequential_vmap({d.name})"))
    _ensure_import(tree, "jax")
    return "caller"


@heldout11_mutation("caller_nondifferentiable_marker", "E60 (`RuntimeError: Unexpected tangent. ... cannot be autodifferentiated`, equinox _ad.py:832): the usage function marks one of its inputs, taken for data, with equinox's guard `eqxi.nondifferentiable(x, name=...)`, and a caller differentiates with respect to it")
def _caller_nondifferentiable_marker(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fn = _eval_fn(tree)
    argnums = tuple(meta.get("argnums", ()))
    if fn is None or not argnums or fn.args.vararg or max(argnums) >= len(fn.args.args):
        return None
    name = fn.args.args[max(argnums)].arg
    at = _docstring_at(fn)
    fn.body[at:at] = stmt(f"{name} = eqxi.nondifferentiable({name}, name={name!r})")
    _after_imports(tree, stmt("import equinox.internal as eqxi"))
    return "caller"


_X64 = "jax.config.update('jax_enable_x64', True)"


def _enable_x64(tree: ast.Module) -> None:
    _ensure_import(tree, "jax")
    _after_imports(tree, stmt(_X64))


@heldout11_mutation("caller_x64_inputs", "E08 by dtype (`Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes`, cd.py:395, where a rule builds a float32 value; E20 tolerates a dtype difference in bwd, so look-alike where the rules follow their inputs' dtype): the module enables x64 and the usage function upcasts its differentiated inputs to float64 (`jnp.asarray(x, jnp.float64)`) for accuracy")
def _caller_x64_inputs(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fn = _eval_fn(tree)
    argnums = tuple(meta.get("argnums", ()))
    if fn is None or not argnums or fn.args.vararg or max(argnums) >= len(fn.args.args):
        return None
    names = [fn.args.args[p].arg for p in argnums]
    at = _docstring_at(fn)
    fn.body[at:at] = stmt("\n".join(f"{n} = jax.tree_util.tree_map(lambda _v: jnp.asarray(_v, jnp.float64), {n})"
                                    for n in names))
    _enable_x64(tree)
    return "caller"


@heldout11_mutation("loss_keepdims_caller", "E43 (`TypeError: Gradient only defined for scalar-output functions. Output had shape: (1,)`, api.py `_check_scalar`): a caller averages the output into its loss with `jnp.mean(..., keepdims=True)` (to keep a batch axis for logging) and differentiates it with `jax.grad`")
def _loss_keepdims_caller(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    argnums = tuple(meta.get("argnums", ()))
    if not argnums:
        return None
    body = (f"    def loss(*a):\n"
            f"        return jnp.mean(eval_fn(*a), keepdims=True)\n"
            f"    return jax.grad(loss, argnums={argnums!r})(*args)")
    expected = (f"    n = jnp.size(eval_fn(*args))\n"
                f"    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums={argnums!r})(*args)\n"
                f"    return tuple(x / n for x in g)")
    return _caller_pair(tree, "keepdims_loss_usage", body, expected)


def _upcast(node: ast.expr) -> ast.expr:
    """`node` upcast leaf by leaf (an output may be a pytree the operator cannot see)."""
    return expr(f"jax.tree_util.tree_map(lambda _o: jnp.asarray(_o, jnp.float64), {ast.unparse(node)})")


@heldout11_mutation("fwd_primal_upcast_x64", "E17 (`Custom VJP fwd rule ... must produce a pair ... where the first element represents the primal output` with its shapes/dtypes, cd.py:922, on a staged call; silently float64 otherwise): the module enables x64 and fwd returns its primal output upcast to float64 leaf by leaf (`jax.tree_util.tree_map(lambda o: jnp.asarray(o, jnp.float64), out)`) for a more accurate forward")
def _fwd_primal_upcast_x64(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    pairs = _rule_pairs(d.rules.get("fwd"))
    if not pairs:
        return None
    for r in pairs:
        r.elts[0] = _upcast(r.elts[0])
    _enable_x64(tree)
    return "fwd"


@heldout11_mutation("jvp_primal_upcast_x64", "E07 (`Custom JVP rule ... must produce a pair ... where the first element represents the primal output` with its shapes/dtypes, cd.py:382, on a staged call; E08 where the tangent stays float32): the module enables x64 and the jvp rule returns its primal output upcast to float64 leaf by leaf (`jax.tree_util.tree_map(lambda o: jnp.asarray(o, jnp.float64), out)`)")
def _jvp_primal_upcast_x64(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    pairs = _rule_pairs(jvp_rule(d))
    if not pairs:
        return None
    for r in pairs:
        r.elts[0] = _upcast(r.elts[0])
    _enable_x64(tree)
    return "jvp"


@heldout11_mutation("jvp_tangent_clipped", "E31 (`NotImplementedError: Transpose rule (for reverse-mode differentiation) for 'min' not implemented`, ad.py:353: the rule is no longer linear in its tangent): the jvp rule bounds its tangent output leaf by leaf with `jnp.clip(t, -1e3, 1e3)` (through `tree_map`) to keep gradients finite, as one clips in a bwd")
def _jvp_tangent_clipped(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    pairs = _rule_pairs(jvp_rule(d))
    if not pairs:
        return None
    for r in pairs:
        r.elts[1] = expr(f"jax.tree_util.tree_map(lambda _t: jnp.clip(_t, -1e3, 1e3), {ast.unparse(r.elts[1])})")
    _ensure_import(tree, "jax")
    return "jvp"


@heldout11_mutation("staticmethod_over_creator", "E63 (`AttributeError: 'staticmethod' object has no attribute 'defvjp'` / `'defjvp'`, at import): the definition moved into a namespace class body (`class _Ops:`), `@staticmethod` stacked outermost above the creator as methods are written, the registration left in the class body where the name is the staticmethod object")
def _staticmethod_over_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if _class_body(tree, d, meta) is None:
        return None
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(0, expr("staticmethod"))
    elif d.creator_stmt is not None:
        d.creator_stmt.value = ast.Call(func=expr("staticmethod"), args=[d.creator_stmt.value], keywords=[])
    else:
        return None
    return "definition"


@heldout11_mutation("rules_unbound_methods", "E47 / E46 (`TypeError: ...fwd() missing 1 required positional argument` / takes N positional arguments, cd.py `_flatten_fwd` / `_flatten_bwd`, or the jvp rule's): the `def` rules moved into a `_Rules` class as methods taking `self` and registered through the class, `f.defvjp(_Rules.fwd, _Rules.bwd)`, not through an instance")
def _rules_unbound_methods(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    if d.reg_stmt is None:
        return None
    rules = [f for f in _rule_functions(d) if any(f is s for s in tree.body) and not f.decorator_list]
    rules = [f for i, f in enumerate(rules) if all(f is not g for g in rules[:i])]
    if not rules or any(f.args.posonlyargs for f in rules):
        return None
    names = {f.name for f in rules}
    reg_args = {id(a) for a in d.registration.args}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in names and id(n) not in reg_args:
            return None  # the rules are read elsewhere by name
    for f in rules:
        f.args.args.insert(0, ast.arg("self"))
    for i, a in enumerate(d.registration.args):
        if isinstance(a, ast.Name) and a.id in names:
            d.registration.args[i] = expr(f"_Rules.{a.id}")
    at = min(tree.body.index(f) for f in rules)
    tree.body = [s for s in tree.body if not any(s is f for f in rules)]
    cls = ast.ClassDef(name="_Rules", bases=[], keywords=[], body=list(rules), decorator_list=[], type_params=[],
                       lineno=0)
    tree.body.insert(at, cls)
    return "registration"


@heldout11_mutation("sequential_vmap_under_creator", "E65's route, E32's neighbour (a transformation beneath the creator receives every argument, nondiff ones too: `sequential_vmap` flattens them, so a callable or None is not a valid JAX type; look-alike for array-only primals, the derivative coming from the rules): `@jax.custom_batching.sequential_vmap` put beneath the creator, on the primal, so that `vmap` loops over the batch")
def _sequential_vmap_under_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    i = _creator_decorator_index(d)
    if i is not None:
        d.primal.decorator_list.insert(i + 1, expr("jax.custom_batching.sequential_vmap"))
    elif d.creator_style == "call" and d.creator.args:
        d.creator.args[0] = ast.Call(func=expr("jax.custom_batching.sequential_vmap"), args=[d.creator.args[0]],
                                     keywords=[])
    else:
        return None
    _ensure_import(tree, "jax")
    return "primal"


@heldout11_mutation("defvjp_partial_decorator", "E49's neighbour, look-alike expected (`functools.partial(f.defvjp, f_fwd)` called on bwd registers both rules; the name bwd is bound to None afterwards): the registration statement replaced by a decorator on bwd, `@functools.partial(f.defvjp, f_fwd)`, the decorator spelling of `@f.defjvp` carried over to custom_vjp")
def _defvjp_partial_decorator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method != "defvjp" or d.reg_stmt is None or len(d.registration.args) != 2:
        return None
    fwd_arg, bwd_arg = d.registration.args
    bwd = d.rules.get("bwd")
    if not isinstance(bwd_arg, ast.Name) or not isinstance(bwd, ast.FunctionDef) or bwd.name != bwd_arg.id:
        return None
    body, r = body_of(tree, d.reg_stmt)
    if not any(s is bwd for s in body):
        return None
    b = next(i for i, s in enumerate(body) if s is bwd)
    # the decorator runs when bwd is defined: the custom function and fwd must exist by then
    defined = {s.name for s in body[:b] if isinstance(s, ast.FunctionDef)}
    defined |= {t.id for s in body[:b] if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    if d.name not in defined or isinstance(fwd_arg, ast.Name) and fwd_arg.id not in defined:
        return None
    kws = "".join(f", {k.arg}={ast.unparse(k.value)}" for k in d.registration.keywords if k.arg)
    bwd.decorator_list.insert(0, expr(f"functools.partial({d.name}.defvjp, {ast.unparse(fwd_arg)}{kws})"))
    del body[r]
    _ensure_import(tree, "functools")
    return "registration"


@heldout11_mutation("defvjp_options_dict", "E29 / E30 (with `symbolic_zeros=True`, fwd receives `CustomVJPPrimal` objects: `Error interpreting argument ... as an abstract array` where it computes on them; a jvp rule receives `SymbolicZero` tangents: `unsupported operand type(s)`): the registration takes its options from a module-level dict, `_DERIVATIVE_OPTIONS = {'symbolic_zeros': True}` splatted with `**` (enabled to skip zero cotangents), the rules unchanged")
def _defvjp_options_dict(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.method not in ("defvjp", "defjvp") or any(k.arg == "symbolic_zeros" or k.arg is None
                                                   for k in d.registration.keywords):
        return None
    _decorator_to_statement(tree, d)
    if d.reg_stmt is None:
        return None
    d.registration.keywords.append(ast.keyword(None, ast.Name("_DERIVATIVE_OPTIONS", ast.Load())))
    _after_imports(tree, stmt("_DERIVATIVE_OPTIONS = {'symbolic_zeros': True}"))
    return "registration"


@heldout11_mutation("creator_to_custom_gradient", "E51 (`TypeError: ... missing 1 required positional argument`, the function returned by a `jax.custom_gradient` function must take exactly the cotangent; look-alike where bwd takes only `(res, g)`): a migration to `jax.custom_gradient` keeps fwd and bwd: the primal renamed `_f_impl`, `@jax.custom_gradient def f(...)` returns `out, functools.partial(f_bwd, res)` from `f_fwd(...)`, the registration dropped (custom_gradient has no nondiff_argnums: their values are not bound)")
def _creator_to_custom_gradient(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fwd, bwd = d.rules.get("fwd"), d.rules.get("bwd")
    if d.kind != "vjp" or d.reg_stmt is None or d.registration.keywords or not isinstance(d.primal, ast.FunctionDef) \
            or not isinstance(fwd, ast.FunctionDef) or not isinstance(bwd, ast.FunctionDef):
        return None
    a = d.primal.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return None
    impl = d.primal.name if d.primal.name != d.name else f"_{d.name.lstrip('_')}_impl"
    if d.creator_style == "decorator":
        i = _creator_decorator_index(d)
        if i is None:
            return None
        del d.primal.decorator_list[i]
    else:
        body, j = body_of(tree, d.creator_stmt)
        del body[j]
    d.primal.name = impl
    for f in (d.primal, fwd, bwd):
        for n in ast.walk(f):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == d.name:
                n.func = ast.Name(impl, ast.Load())
    params = ", ".join(param_names(d.primal))
    new = stmt(f"@jax.custom_gradient\n"
               f"def {d.name}({params}):\n"
               f"    out, res = {fwd.name}({params})\n"
               f"    return out, functools.partial({bwd.name}, res)\n")[0]
    new.args = copy.deepcopy(a)
    body, r = body_of(tree, d.reg_stmt)
    body[r] = new
    _ensure_import(tree, "jax")
    _ensure_import(tree, "functools")
    return "creator"


# ----------------------------------------------------------------------------- spelling operators

SPELLINGS: Dict[str, Tuple[str, Op]] = {}


def spelling(name: str, doc: str) -> Callable[[Op], Op]:
    def deco(fn: Op) -> Op:
        SPELLINGS[name] = (doc, fn)
        return fn
    return deco


def _decorator_to_statement(tree: ast.Module, d: Deriv) -> None:
    """`@f.defjvp def rule` -> `def rule` + `f.defjvp(rule)` (the same registration)."""
    if d.reg_decorated is None:
        return
    rule = d.reg_decorated
    rule.decorator_list = []
    body, i = body_of(tree, rule)
    st = ast.Expr(d.registration)
    body.insert(i + 1, st)
    d.reg_stmt, d.reg_decorated = st, None


@spelling("call_form", "decorator <-> call form of the creator")
def _call_form(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    kind = "jax.custom_vjp" if d.kind == "vjp" else "jax.custom_jvp"
    if d.creator_style == "decorator":
        d.primal.decorator_list = [x for x in d.primal.decorator_list if x is not d.creator]
        body, i = body_of(tree, d.primal)
        call = ast.Call(func=expr(kind), args=[ast.Name(d.primal.name, ast.Load())], keywords=d.keywords)
        body.insert(i + 1, ast.Assign([ast.Name(d.name, ast.Store())], call, lineno=0))
        return "creator"
    if isinstance(d.primal, ast.FunctionDef) and d.creator_stmt is not None and d.primal.name == d.name:
        body, i = body_of(tree, d.creator_stmt)
        body[i] = ast.Pass()
        dec = expr(kind) if not d.keywords else ast.Call(func=expr("functools.partial"), args=[expr(kind)], keywords=d.keywords)
        d.primal.decorator_list.append(dec)
        return "creator"
    return None


@spelling("registration_form", "`@f.defjvp` decorator <-> `f.defjvp(rule)` statement")
def _registration_form(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if d.reg_decorated is not None:
        _decorator_to_statement(tree, d)
        return "registration"
    if d.method == "defjvp" and isinstance(d.registration.args[0], ast.Name) and isinstance(d.rules.get("jvp"), ast.FunctionDef):
        rule = d.rules["jvp"]
        body, i = body_of(tree, d.reg_stmt)
        rbody, j = body_of(tree, rule)
        if rbody is not body or j > i:
            return None
        del body[i]
        body.remove(rule)
        dec = d.registration.func if not d.registration.keywords else ast.Call(
            func=expr("functools.partial"), args=[d.registration.func], keywords=d.registration.keywords)
        rule.decorator_list.append(dec)
        body.insert(i - 1, rule)
        return "registration"
    return None


def _rule_defs(d: Deriv) -> List[Tuple[str, Fn]]:
    if d.method == "defjvps":
        return [(f"jvp{i}", r) for i, r in enumerate(d.defjvps) if r is not None]
    return [(k, v) for k, v in d.rules.items() if v is not None]


@spelling("lambda", "`def` rules <-> `lambda` rules")
def _lambda(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    done = False
    for role, fn in _rule_defs(d):
        if isinstance(fn, ast.FunctionDef):
            body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                lam = ast.Lambda(args=fn.args, body=body[0].value)
                replace(tree, fn, ast.Assign([ast.Name(fn.name, ast.Store())], lam, lineno=0))
                done = True
        elif isinstance(fn, ast.Lambda) and d.reg_stmt is not None:
            name = f"_{d.name}_{role}"
            body, i = body_of(tree, d.reg_stmt)
            new = ast.FunctionDef(name=name, args=fn.args, body=[ast.Return(fn.body)], decorator_list=[], returns=None,
                                  type_params=[], lineno=0)
            replace(tree, fn, ast.Name(name, ast.Load()))
            body.insert(i, new)
            done = True
    return "rules" if done else None


@spelling("helper", "each rule returns through a helper function")
def _helper(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    done = False
    for role, fn in _rule_defs(d):
        if fn.args.vararg or fn.args.kwonlyargs:
            continue
        names = param_names(fn)
        if isinstance(fn, ast.FunctionDef):
            impl = copy.deepcopy(fn)
            impl.name = f"_{fn.name}_impl"
            impl.decorator_list = []
            body, i = body_of(tree, fn)
            body.insert(i, impl)
            fn.body = [ast.Return(expr(f"{impl.name}({', '.join(names)})"))]
            done = True
        elif d.reg_stmt is not None:
            name = f"_{d.name}_{role}_helper"
            body, i = body_of(tree, d.reg_stmt)
            helper = ast.FunctionDef(name=name, args=copy.deepcopy(fn.args), body=[ast.Return(fn.body)], decorator_list=[],
                                     returns=None, type_params=[], lineno=0)
            fn.body = expr(f"{name}({', '.join(names)})")
            body.insert(i, helper)
            done = True
    return "rules" if done else None


@spelling("staticmethod", "module-function rules <-> static methods of a class")
def _staticmethod(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    if d.reg_stmt is None:
        return None
    rules = [fn for _, fn in _rule_defs(d) if isinstance(fn, ast.FunctionDef)]
    if not rules:
        return None
    reg_body, _ = body_of(tree, d.reg_stmt)
    if any(body_of(tree, fn)[0] is not reg_body for fn in rules):
        return None
    first = min(reg_body.index(fn) for fn in rules)
    cls = ast.ClassDef(name="_Rules", bases=[], keywords=[], body=[], decorator_list=[], type_params=[], lineno=0)
    for fn in rules:
        reg_body.remove(fn)
        fn.decorator_list = [ast.Name("staticmethod", ast.Load())] + fn.decorator_list
        cls.body.append(fn)
    reg_body.insert(first, cls)
    names = {fn.name for fn in rules}
    for i, arg in enumerate(d.registration.args):
        if isinstance(arg, ast.Name) and arg.id in names:
            d.registration.args[i] = expr(f"_Rules.{arg.id}")
    # a rule the module also calls by name (a primal that calls its fwd) keeps that name
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} & names
    at = reg_body.index(cls) + 1
    for name in sorted(used):
        reg_body.insert(at, ast.Assign([ast.Name(name, ast.Store())], expr(f"_Rules.{name}"), lineno=0))
    return "rules"


@spelling("keyword_nondiff", "nondiff_argnums <-> nondiff_argnames")
def _keyword_nondiff(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    for kw in d.keywords:
        if kw.arg == "nondiff_argnums" and isinstance(d.primal, ast.FunctionDef):
            positions = d.nondiff  # read before the keyword is renamed
            kw.arg = "nondiff_argnames"
            kw.value = expr(repr(tuple(d.params[i] for i in positions)))
            return "creator"
        if kw.arg == "nondiff_argnames":
            positions = d.nondiff
            kw.arg = "nondiff_argnums"
            kw.value = expr(repr(positions))
            return "creator"
    return None


@spelling("partial", "rules registered as functools.partial of a function with a leading configuration "
          "parameter (as jax's `zeta.defjvp(partial(jvp, _zeta_series_expansion))`)")
def _partial(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    if d.reg_stmt is None:
        return None
    done = False
    for i, arg in enumerate(d.registration.args):
        fn = None
        if isinstance(arg, ast.Name):
            fn = next((f for _, f in _rule_defs(d) if isinstance(f, ast.FunctionDef) and f.name == arg.id), None)
        if fn is None:
            continue
        # a rule that already has a parameter named `config` (qwix's fwd) gets `_config`
        fn.args.args.insert(0, ast.arg("_config" if "config" in param_names(fn) else "config"))
        d.registration.args[i] = ast.Call(func=expr("functools.partial"), args=[arg, ast.Constant(None)], keywords=[])
        done = True
    return "rules" if done else None


@spelling("neutral_names", "parameters of the primal and the rules renamed a0, a1, ...")
def _neutral(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    fns: List[Fn] = [d.primal] + [fn for _, fn in _rule_defs(d)]
    if any(kw.arg == "nondiff_argnames" for kw in d.keywords):
        fns = fns[1:]
    done = False
    for fn in fns:
        mapping = {a.arg: f"a{i}" for i, a in enumerate(fn.args.args)}
        if not mapping:
            continue
        for a in fn.args.args:
            a.arg = mapping[a.arg]
        body = [fn.body] if isinstance(fn, ast.Lambda) else fn.body
        for st in body:
            for n in ast.walk(st):
                if isinstance(n, ast.Name) and n.id in mapping:
                    n.id = mapping[n.id]
        done = True
    return "names" if done else None


@spelling("call_keywords", "calls of the custom function pass every argument by keyword (`f(x=a, n=b)`)")
def _call_keywords(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef) or d.primal.args.vararg or d.primal.args.posonlyargs:
        return None
    params = d.params
    done = False
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == d.name
                and node.args and not node.keywords and len(node.args) <= len(params)
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            node.keywords = [ast.keyword(params[i], a) for i, a in enumerate(node.args)]
            node.args = []
            done = True
    return "calls" if done else None


@spelling("partial_creator", "the creator is the decorator `functools.partial(jax.custom_vjp, nondiff_argnums=(...))`, "
          "the tuple empty when nothing is nondiff")
def _partial_creator(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    if not isinstance(d.primal, ast.FunctionDef) or d.primal.name != d.name:
        return None
    if any(kw.arg not in ("nondiff_argnums", "nondiff_argnames") for kw in d.keywords):
        return None
    kind = "jax.custom_vjp" if d.kind == "vjp" else "jax.custom_jvp"
    dec = ast.Call(func=expr("functools.partial"), args=[expr(kind)],
                   keywords=[ast.keyword("nondiff_argnums", expr(repr(tuple(d.nondiff))))])
    if d.creator_style == "decorator":
        d.primal.decorator_list = [dec if x is d.creator else x for x in d.primal.decorator_list]
        return "creator"
    if d.creator_stmt is not None:
        body, i = body_of(tree, d.creator_stmt)
        body[i] = ast.Pass()
        d.primal.decorator_list.append(dec)
        return "creator"
    return None


@spelling("registration_helper", "the rules registered through a module function that calls the method on its "
          "parameter (`def _register(fn, fwd, bwd): fn.defvjp(fwd, bwd)`, then `_register(f, f_fwd, f_bwd)`)")
def _registration_helper(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    _decorator_to_statement(tree, d)
    if d.reg_stmt is None or not isinstance(d.registration.func, ast.Attribute) or d.method == "defjvps":
        return None
    call = d.registration
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    body, i = body_of(tree, d.reg_stmt)
    if body is not tree.body:
        return None
    roles = {"defvjp": ["fwd", "bwd"], "defjvp": ["jvp"]}[d.method]
    if len(call.args) > len(roles):
        return None
    names = roles[:len(call.args)] + [k.arg for k in call.keywords]  # type: ignore[misc]
    helper_name = f"_register_{d.name}"
    inner = ", ".join(roles[:len(call.args)] + [f"{k.arg}={k.arg}" for k in call.keywords])
    helper = stmt(f"def {helper_name}(fn, {', '.join(names)}):\n    fn.{d.method}({inner})\n")[0]
    outer = ast.Call(func=ast.Name(helper_name, ast.Load()), args=[ast.Name(d.name, ast.Load()), *call.args],
                     keywords=list(call.keywords))
    body[i] = ast.Expr(outer)
    first_def = next((j for j, st in enumerate(body) if isinstance(st, (ast.FunctionDef, ast.ClassDef))), i)
    body.insert(min(first_def, i), helper)
    return "registration"


def _moved_definition(tree: ast.Module, d: Deriv) -> Optional[List[ast.stmt]]:
    """The module-level statements that make the custom derivative (its primal, creator, rules
    and registration), in order; None when one of them is not at module level, or when the rest
    of the module reads a rule by name (it could not see it once the statements move)."""
    parts: List[ast.AST] = [d.primal, d.creator_stmt, d.reg_stmt, d.reg_decorated]
    parts += [fn for _, fn in _rule_defs(d) if isinstance(fn, ast.FunctionDef)]
    stmts = [s for s in tree.body if any(s is p for p in parts if p is not None)]
    wanted = [p for p in parts if p is not None and not isinstance(p, ast.Lambda)]
    if len(stmts) != len({id(p) for p in wanted}):
        return None
    names = {s.name for s in stmts if isinstance(s, ast.FunctionDef)} - {d.name}
    rest = [s for s in tree.body if not any(s is m for m in stmts)]
    if any(isinstance(n, ast.Name) and n.id in names for s in rest for n in ast.walk(s)):
        return None
    return stmts


def _enclose(tree: ast.Module, d: Deriv, make: Callable[[List[ast.stmt]], List[ast.stmt]]) -> Optional[str]:
    stmts = _moved_definition(tree, d)
    if stmts is None:
        return None
    at = tree.body.index(stmts[0])
    tree.body = [s for s in tree.body if not any(s is m for m in stmts)]
    tree.body[at:at] = make(stmts + [ast.Return(ast.Name(d.name, ast.Load()))])
    return "definition"


@spelling("factory", "the definition (primal, rules, registration) made inside a factory function that returns it, "
          "called once at module level (jax-fem's `ad_wrapper`, cola's `iterative_autograd`)")
def _factory(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    maker = f"_make_{d.name}"

    def make(body: List[ast.stmt]) -> List[ast.stmt]:
        fn = ast.FunctionDef(name=maker, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                             defaults=[]),
                             body=body, decorator_list=[], returns=None, type_params=[], lineno=0)
        return [fn, ast.Assign([ast.Name(d.name, ast.Store())], expr(f"{maker}()"), lineno=0)]
    return _enclose(tree, d, make)


@spelling("method", "the definition made inside a method of a class, on an instance made once at module level "
          "(trax's layers, ott's solvers)")
def _method(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    def make(body: List[ast.stmt]) -> List[ast.stmt]:
        args = ast.arguments(posonlyargs=[], args=[ast.arg("self")], kwonlyargs=[], kw_defaults=[], defaults=[])
        fn = ast.FunctionDef(name="build", args=args, body=body, decorator_list=[], returns=None, type_params=[],
                             lineno=0)
        cls = ast.ClassDef(name=f"_{d.name}_layer", bases=[], keywords=[], body=[fn], decorator_list=[],
                           type_params=[], lineno=0)
        return [cls, ast.Assign([ast.Name(d.name, ast.Store())], expr(f"_{d.name}_layer().build()"), lineno=0)]
    return _enclose(tree, d, make)


@spelling("class_body", "the definition (primal, rules, registration) in a class body, read as `Ops.f` "
          "(a namespace class of kernels, as flax's and praxis's ops modules keep them)")
def _class_body(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
    stmts = _moved_definition(tree, d)
    if stmts is None:
        return None
    # a function of a class body does not see the body's other names (the primal calling its fwd
    # by name): only the custom function itself, re-exported at module level, stays reachable
    names = {s.name for s in stmts if isinstance(s, ast.FunctionDef)} - {d.name}
    for fn in [s for s in stmts if isinstance(s, ast.FunctionDef)] + [n for s in stmts for n in ast.walk(s)
                                                                      if isinstance(n, ast.Lambda)]:
        inner = fn.body if isinstance(fn, ast.FunctionDef) else [fn.body]
        if any(isinstance(n, ast.Name) and n.id in names for st in inner for n in ast.walk(st)):
            return None
    at = tree.body.index(stmts[0])
    tree.body = [s for s in tree.body if not any(s is m for m in stmts)]
    cls = ast.ClassDef(name="_Ops", bases=[], keywords=[], body=stmts, decorator_list=[], type_params=[], lineno=0)
    tree.body[at:at] = [cls, ast.Assign([ast.Name(d.name, ast.Store())], expr(f"_Ops.{d.name}"), lineno=0)]
    return "definition"


# Pytree spellings (issue 45: "pytrees of dicts, tuples and NamedTuples in and out"): the same
# definition with its output, or its first differentiable input, held in a container. Every use
# is rewritten with it (the primal's returns, fwd's primal output, the cotangent bwd receives or
# gives, the jvp rule's primals and outputs, each call of the function), so JAX computes the same
# values; a module the rewrite cannot follow (a lambda rule, a return that is not a literal
# pair, the function passed around uncalled) is not spelled.
PYTREES = {
    "tuple": ("({},)", "{}[0]"),
    "dict": ("{{'value': {}}}", "{}['value']"),
    "namedtuple": ("_Box({})", "{}.value"),
}
_BOX = "class _Box(typing.NamedTuple):\n    value: typing.Any\n"


def _own_returns(fn: ast.FunctionDef) -> List[ast.Return]:
    out: List[ast.Return] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return):
                out.append(child)
            visit(child)
    visit(fn)
    return out


def _prepend(fn: ast.FunctionDef, statements: List[ast.stmt]) -> None:
    at = 1 if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        and isinstance(fn.body[0].value.value, str) else 0
    fn.body[at:at] = statements


def _container_module(tree: ast.Module, container: str) -> None:
    """`_Box` (a NamedTuple) and `import typing` after the module's imports, for the namedtuple spelling."""
    if container != "namedtuple":
        return
    at = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            at = i + 1
    tree.body[at:at] = stmt("import typing\n" + _BOX)


def _uses_of(tree: ast.Module, d: Deriv) -> Optional[List[ast.Call]]:
    """The calls of the custom function; None when it is also read otherwise (passed to a
    transformation, aliased), which the spelling cannot follow."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == d.name]
    called = {id(c.func) for c in calls}
    registering = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                   and n.value.id == d.name and n.attr in ("defvjp", "defjvp", "defjvps")}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == d.name and isinstance(n.ctx, ast.Load) \
                and id(n) not in called and id(n) not in registering:
            return None
    return calls


def _plain_rules(tree: ast.Module, d: Deriv) -> Optional[List[Tuple[str, ast.FunctionDef]]]:
    """The rules, all `def`s read only by the registration (a primal that calls its fwd would
    unwrap twice); None otherwise."""
    rules = _rule_defs(d)
    if not isinstance(d.primal, ast.FunctionDef) or not rules or any(not isinstance(fn, ast.FunctionDef)
                                                                      or fn.args.vararg for _, fn in rules):
        return None
    names = {fn.name for _, fn in rules}
    registering = {id(n) for n in ast.walk(d.registration)}
    if any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load) and id(n) not in registering
           for n in ast.walk(tree)):
        return None
    return rules  # type: ignore[return-value]


def _pytree_out(container: str) -> Op:
    wrap, unwrap = PYTREES[container]

    def op(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
        rules = _plain_rules(tree, d)
        calls = _uses_of(tree, d)
        if rules is None or calls is None:
            return None
        primal_returns = _own_returns(d.primal)  # type: ignore[arg-type]
        if not primal_returns or any(r.value is None for r in primal_returns):
            return None
        edits: List[Callable[[], None]] = []
        for ret in primal_returns:
            edits.append(lambda ret=ret: setattr(ret, "value", expr(wrap.format(ast.unparse(ret.value)))))
        for role, fn in rules:
            own = _own_returns(fn)
            if not own or any(r.value is None for r in own):
                return None
            if role in ("fwd", "jvp"):
                if any(not (isinstance(r.value, (ast.Tuple, ast.List)) and len(r.value.elts) == 2) for r in own):
                    return None
                slots = (0,) if role == "fwd" else (0, 1)
                for ret in own:
                    for k in slots:
                        edits.append(lambda ret=ret, k=k: ret.value.elts.__setitem__(
                            k, expr(wrap.format(ast.unparse(ret.value.elts[k])))))
            elif role == "bwd":
                names = param_names(fn)
                if not names:
                    return None
                edits.append(lambda fn=fn, g=names[-1]: _prepend(fn, stmt(f"{g} = {unwrap.format(g)}")))
            else:  # a defjvps rule: (g, ans, *primals) -> the tangent of the output
                names = param_names(fn)
                if len(names) < 2:
                    return None
                for ret in own:
                    edits.append(lambda ret=ret: setattr(ret, "value", expr(wrap.format(ast.unparse(ret.value)))))
                edits.append(lambda fn=fn, g=names[0], a=names[1]: _prepend(
                    fn, stmt(f"{g} = {unwrap.format(g)}\n{a} = {unwrap.format(a)}")))
        for call in calls:
            edits.append(lambda call=call: replace(tree, call, expr(unwrap.format(ast.unparse(call)))))
        for edit in edits:
            edit()
        _container_module(tree, container)
        return "pytree"
    return op


def _pytree_in(container: str) -> Op:
    wrap, unwrap = PYTREES[container]

    def op(tree: ast.Module, d: Deriv, meta: Dict) -> Optional[str]:
        rules = _plain_rules(tree, d)
        calls = _uses_of(tree, d)
        if rules is None or calls is None or not d.diff_positions or d.primal.args.vararg:  # type: ignore[union-attr]
            return None
        p = d.diff_positions[0]
        k = 0  # its place among the differentiable arguments
        name = d.params[p]
        if p >= len(d.params) - len(d.primal.args.defaults):  # a default: callers may leave it out
            return None
        edits: List[Callable[[], None]] = [lambda: _prepend(d.primal, stmt(f"{name} = {unwrap.format(name)}"))]  # type: ignore[arg-type]
        for role, fn in rules:
            names = param_names(fn)
            if role == "fwd":
                if len(names) <= p:
                    return None
                edits.append(lambda fn=fn, x=names[p]: _prepend(fn, stmt(f"{x} = {unwrap.format(x)}")))
            elif role == "bwd":
                own = _own_returns(fn)
                if not own or any(not isinstance(r.value, (ast.Tuple, ast.List)) or len(r.value.elts) <= k
                                  or any(isinstance(e, ast.Starred) for e in r.value.elts) for r in own):
                    return None
                for ret in own:
                    if not is_none(ret.value.elts[k]):
                        edits.append(lambda ret=ret: ret.value.elts.__setitem__(
                            k, expr(wrap.format(ast.unparse(ret.value.elts[k])))))
            elif role == "jvp":
                if len(names) < 2:
                    return None
                prim, tan = names[-2], names[-1]
                edits.append(lambda fn=fn, prim=prim, tan=tan: _prepend(fn, stmt(
                    f"{prim} = ({unwrap.format(prim + '[0]')}, *{prim}[1:])\n"
                    f"{tan} = ({unwrap.format(tan + '[0]')}, *{tan}[1:])")))
            else:  # defjvps: the first rule's `g` is the container's tangent; every rule's primal p is it
                if len(names) < 2 + p + 1:
                    return None
                lines = [f"{names[2 + p]} = {unwrap.format(names[2 + p])}"]
                if role == f"jvp{k}":
                    lines.append(f"{names[0]} = {unwrap.format(names[0])}")
                edits.append(lambda fn=fn, lines=lines: _prepend(fn, stmt("\n".join(lines))))
        return _finish_in(tree, d, edits, calls, p, name, wrap, container)
    return op


def _finish_in(tree: ast.Module, d: Deriv, edits: List[Callable[[], None]], calls: List[ast.Call], p: int, name: str,
               wrap: str, container: str) -> Optional[str]:
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        if p < len(call.args):
            edits.append(lambda call=call: call.args.__setitem__(p, expr(wrap.format(ast.unparse(call.args[p])))))
        else:
            kw = next((k for k in call.keywords if k.arg == name), None)
            if kw is None:
                return None
            edits.append(lambda kw=kw: setattr(kw, "value", expr(wrap.format(ast.unparse(kw.value)))))
    for edit in edits:
        edit()
    _container_module(tree, container)
    return "pytree"


for _container in PYTREES:
    spelling(f"out_{_container}", f"the function's output held in a {_container} (`{PYTREES[_container][0].format('y')}`): "
             f"the primal's returns, fwd's primal output and the jvp rule's pair wrap it, bwd and the defjvps rules "
             f"unwrap the cotangent, every call unwraps it")(_pytree_out(_container))
    spelling(f"in_{_container}", f"the first differentiable argument passed in a {_container} "
             f"(`{PYTREES[_container][0].format('x')}`): the primal and fwd unwrap it, bwd wraps its cotangent, "
             f"the jvp rule unwraps its primal and tangent, every call wraps it")(_pytree_in(_container))


# Spellings over two modules (issue 45 item 2, "across modules"): the rules moved to a module of
# their own, imported where they are registered. Not in SPELLINGS (its text is two files, which
# `spell`'s callers that lint one file cannot take): `score.py --spellings` writes both.
RULES_MODULE = "__rules_module__"  # the rules module's name, chosen by whoever writes the files
MODULE_SPELLINGS: Dict[str, str] = {
    "rules_module": "the rules defined in another module, `from rules import f_fwd, f_bwd`",
    "rules_module_attr": "the rules defined in another module, `import rules as R` and `R.f_fwd`",
}


def split_rules(source: str, name: str) -> Optional[Tuple[str, str]]:
    """(the module registering the rules, the rules' module) of `source` in the two-module
    spelling `name`, the rules' module imported as RULES_MODULE; None when a rule reads
    something the move cannot take along (the custom function itself, a name bound in the
    module other than a top-level function, import or simple assignment)."""
    tree = ast.parse(source)
    try:
        read_eval(tree)
        d = find(tree)
    except ValueError:
        return None
    _decorator_to_statement(tree, d)
    rules = [fn for _, fn in _rule_defs(d)]
    if d.reg_stmt is None or not rules or any(not isinstance(fn, ast.FunctionDef) or fn not in tree.body for fn in rules):
        return None
    top: Dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            top[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            top[node.targets[0].id] = node
    moved: List[ast.stmt] = []
    todo: List[ast.stmt] = list(rules)
    while todo:
        node = todo.pop(0)
        if any(node is m for m in moved):
            continue
        moved.append(node)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id == d.name or n.id == "EVAL":
                    return None
                if n.id in top and top[n.id] is not d.primal and not any(top[n.id] is m for m in moved):
                    todo.append(top[n.id])
    rest = [s for s in tree.body if not any(s is m for m in moved)]
    names = {m.name if isinstance(m, ast.FunctionDef) else m.targets[0].id for m in moved}  # type: ignore[union-attr]
    # what stays must not read what moves, but the registration's arguments
    reg_args = {id(n) for a in d.registration.args for n in ast.walk(a)}
    for node in rest:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in names and id(n) not in reg_args:
                return None
    imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    rule_names = {fn.name for fn in rules}
    if name == "rules_module_attr":
        for a in d.registration.args:
            for n in ast.walk(a):
                if isinstance(n, ast.Name) and n.id in rule_names:
                    replace(tree, n, expr(f"R.{n.id}"))
        link = stmt(f"import {RULES_MODULE} as R")
    else:
        link = stmt(f"from {RULES_MODULE} import {', '.join(sorted(rule_names))}")
    at = max((i + 1 for i, s in enumerate(rest) if isinstance(s, (ast.Import, ast.ImportFrom))), default=0)
    tree.body = rest[:at] + link + rest[at:]
    module = ast.Module(body=[ast.Expr(ast.Constant(f"The rules of {d.name}, registered in another module."))]
                        + copy.deepcopy(imports) + sorted(moved, key=lambda n: n.lineno), type_ignores=[])
    _bind_jnp(tree)
    _bind_jnp(module)
    for t in (tree, module):
        ast.fix_missing_locations(t)
    main, rules_text = ast.unparse(tree) + "\n", ast.unparse(module) + "\n"
    compile(main, "<main>", "exec")
    compile(rules_text, "<rules>", "exec")
    return main, rules_text


# ----------------------------------------------------------------------------- driving


def read_eval(tree: ast.Module) -> Tuple[ast.Assign, Dict]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EVAL" for t in node.targets):
            return node, ast.literal_eval(node.value)
    raise ValueError("no EVAL")


def apply(source: str, op: Op, meta_updates: Optional[Dict] = None) -> Optional[Tuple[str, Dict, str]]:
    """(new source, its EVAL, what was edited) or None when the operator does not apply."""
    tree = ast.parse(source)
    node, meta = read_eval(tree)
    d = find(tree)
    where = op(tree, d, meta)
    if where is None:
        return None
    meta.update(meta_updates or {})
    node.value = expr(repr(meta))
    _bind_jnp(tree)
    _bind_modules(tree, {"functools": "import functools", "jax": "import jax", "np": "import numpy as np"})
    ast.fix_missing_locations(tree)
    text = ast.unparse(tree) + "\n"
    if meta.get("claim") == "no-op":
        text = "\n".join(ln + SPAN if "jax_use_direct_linearize" in ln else ln for ln in text.splitlines()) + "\n"
    compile(text, "<mutant>", "exec")
    return text, meta, where


def _bind_jnp(tree: ast.Module) -> None:
    """Operators write `jnp.`; a base that binds jax.numpy under another name (`np`, `jp`) or not at
    all gets `import jax.numpy as jnp` after its imports, so the mutant fails for the edit, not with
    a NameError (bases that bind `jnp` already are left byte-identical)."""
    uses = any(isinstance(n, ast.Name) and n.id == "jnp" for n in ast.walk(tree))
    bound = any(isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == "jnp" for a in n.names)
                or isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "jnp" for t in n.targets)
                for n in ast.walk(tree))
    if not uses or bound:
        return
    at = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            at = i + 1
    tree.body.insert(at, ast.parse("import jax.numpy as jnp").body[0])


def _bind_modules(tree: ast.Module, imports: Dict[str, str]) -> None:
    """Operators and spellings write `functools.partial`, `jax.jit`, `np.asarray`; a base that
    imports only `from functools import partial` (or binds `np` nowhere) gets the import after its
    imports, so the mutant fails for the edit, not with a NameError (ten mutants of heldout5/6 were
    labelled hazards for `NameError: name 'functools'/'np' is not defined` before this). A name
    bound in any way (an import, an alias, an assignment, a parameter) is left alone: bases that
    bind them are byte-identical."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
    for name, statement in imports.items():
        if name in used and name not in bound:
            _after_imports(tree, ast.parse(statement).body)


def base_files() -> List[Path]:
    return sorted(p for p in BASES.glob("*.py") if not p.name.startswith("test_usage_"))


def held_out_files() -> List[Path]:
    return [p for folder in HELD_OUT_SETS for p in sorted(folder.glob("*.py")) if not p.name.startswith("test_usage_")]


def spell(source: str, name: str) -> Optional[str]:
    """`source` in spelling `name`; None when it does not apply (or the module has no
    registration to respell: an `unregistered` mutant)."""
    try:
        out = apply(source, SPELLINGS[name][1])
    except ValueError:
        return None
    return None if out is None else out[0]


# Operators that apply to every base in the same way (a statement added, a registration dropped or
# doubled, a caller added): made from every third base only, to bound the labelling time on JAX
# (forward_mode: every custom_vjp base, and every third custom_jvp one).
SAMPLED = ("direct_linearize", "jvptracer_sniff", "registered_twice", "unregistered", "forward_mode")
# Held-out sets whose bases get the older operators (every operator not the set's own) on a fixed
# third of the (operator, base) pairs only, chosen by a hash of the pair so that adding a base
# leaves the others' mutants as they are: heldout6 (2026-12-07), to bound its labelling time on
# 2 shared cores; heldout7 (2026-12-07) likewise, on a seventh of the pairs (its 15-16 bases would
# otherwise give over 400 mutants to label). A set's own operators (the first set their
# `ONLY_SETS` names) apply to every base of it. heldout8 (2026-12-07): a fifteenth of the pairs (its own 18
# operators give about eleven mutants per base already; a ninth would have given 280 mutants for 16 bases). heldout9
# (2026-12-07): a ninth (its own 15 operators give about eight mutants per base; a seventh would have given 249
# mutants for 13 bases).
# heldout10 (2026-12-07): a thirteenth (its own 13 operators give about ten mutants per base; a ninth would have given
# 279 mutants for 14 bases).
# heldout11 (2026-12-08): a thirteenth (its own 13 operators give about nine mutants per base; a tenth would have given
# 258 mutants for 14 bases, a thirteenth gives 227).
SAMPLED_SETS = ("heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11")
SAMPLE_EVERY = {"heldout6": 3, "heldout7": 7, "heldout8": 15, "heldout9": 9, "heldout10": 13, "heldout11": 13}  # keep a pair when crc32("operator/base") % n == 0


def build() -> Tuple[Dict, Dict[Path, str]]:
    """(the manifest, {mutant path: its text}) for every applicable (base, operator) pair, made
    in memory: nothing is written."""
    manifest: Dict = {"bases": {}, "mutants": {}, "operators": {k: v[0] for k, v in MUTATIONS.items()},
                      "spellings": {k: v[0] for k, v in SPELLINGS.items()}}
    texts: Dict[Path, str] = {}
    # held-out bases are numbered apart (their own every-third sample), so adding one leaves the
    # original set's mutants as they are
    files: List[Tuple[int, Path, Optional[str]]] = [(i, p, None) for i, p in enumerate(base_files())]
    for folder in HELD_OUT_SETS:
        files += [(i, p, folder.name) for i, p in enumerate(p for p in sorted(folder.glob("*.py"))
                                                            if not p.name.startswith("test_usage_"))]
    for index, path, held_out in files:
        source = path.read_text(encoding="utf-8")
        _, meta = read_eval(ast.parse(source))
        stem = path.stem
        manifest["bases"][stem] = {"library": meta["library"], "source": meta["source"],
                                   "path": f"eval/mutation/{path.parent.name}/{path.name}",
                                   "kind": find(ast.parse(source)).kind}
        if held_out:
            manifest["bases"][stem].update(held_out=True, held_out_set=held_out)
        kind = manifest["bases"][stem]["kind"]
        for name, (_, op) in MUTATIONS.items():
            if held_out in SAMPLED_SETS and ONLY_SETS.get(name, ("",))[0] != held_out:
                if zlib.crc32(f"{name}/{stem}".encode()) % SAMPLE_EVERY[held_out]:  # the older operators: a fixed share of the pairs
                    continue
            elif name in SAMPLED and index % 3 and not (name == "forward_mode" and kind == "vjp"):
                continue
            if name in ONLY_SETS and held_out not in ONLY_SETS[name]:
                continue
            try:
                out = apply(source, op, {"id": f"mutation/{name}/{stem}", "expect": "unknown", "operator": name, "base": stem})
            except UnreadableNondiff:
                continue  # computed nondiff positions: the operator cannot know what it edits
            if out is None:
                continue
            text, meta2, where = out
            texts[CASES / name / f"{stem}.py"] = text
            manifest["mutants"][f"{name}/{stem}"] = {"base": stem, "operator": name, "edited": where,
                                                     "path": f"eval/mutation/cases/{name}/{stem}.py"}
            if held_out:
                manifest["mutants"][f"{name}/{stem}"].update(held_out=True, held_out_set=held_out)
    return manifest, texts


def _manifest_text(manifest: Dict) -> str:
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def _mutants_on_disk() -> List[Path]:
    """The mutant files under cases/ (not the usage tests beside them)."""
    if not CASES.exists():
        return []
    return sorted(p for p in CASES.rglob("*.py") if not p.name.startswith("test_usage_"))


def generate() -> Dict:
    """Write cases/<operator>/<base>.py for every applicable (base, operator) pair and the
    manifest; remove the mutants no operator makes any more. The usage tests are kept."""
    manifest, texts = build()
    for old in _mutants_on_disk():
        if old not in texts:
            old.unlink()
    for target, text in texts.items():
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    MANIFEST.write_text(_manifest_text(manifest), encoding="utf-8")
    return manifest


def check() -> List[str]:
    """What a regeneration would change (missing, stale or extra mutants, the manifest), each a
    line; nothing is written."""
    manifest, texts = build()
    problems = [f"missing: {p.relative_to(HERE)}" for p in texts if not p.is_file()]
    problems += [f"stale: {p.relative_to(HERE)}" for p, text in texts.items()
                 if p.is_file() and p.read_text(encoding="utf-8") != text]
    problems += [f"extra: {p.relative_to(HERE)}" for p in _mutants_on_disk() if p not in texts]
    if not MANIFEST.is_file() or MANIFEST.read_text(encoding="utf-8") != _manifest_text(manifest):
        problems.append(f"stale: {MANIFEST.relative_to(HERE)}")
    return problems


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a mutant or the manifest is missing or stale; write nothing")
    options = parser.parse_args(argv)
    if options.check:
        problems = check()
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print(f"{len(problems)} mutants or manifest out of date: python eval/mutation/mutate.py", file=sys.stderr)
        return 1 if problems else 0
    m = generate()
    held = sum(1 for b in m["bases"].values() if b.get("held_out"))
    print(f"{len(m['bases'])} bases ({held} held out), {len(m['mutants'])} mutants "
          f"({sum(1 for v in m['mutants'].values() if v.get('held_out'))} held out)")
    from collections import Counter
    for op, n in sorted(Counter(v["operator"] for v in m["mutants"].values()).items()):
        print(f"  {op:24} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
