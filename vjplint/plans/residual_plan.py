"""Plan the residual-plus-None rewrite on the `ast` model: what moves, how each `return`
changes, and which names are fresh, or why no fix can be offered.

This module never imports libcst (linting decides fix safety with it); the writer,
`fixes/residual_text.py`, executes a plan as text edits. Locations are (1-based line, 0-based
code-point column), so the writer finds the same `ast` nodes again.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

from vjplint.facts.dependence import none_draws_vjp602
from vjplint.facts.rule_evidence import rewrite_none_draws_vjp602
from vjplint.model.jaxapi import ARRAY_NAMESPACES, PARTIAL
from vjplint.model.file_model import CustomDerivative, FileModel, Registration, RuleFunction, Signature, digest_once, joined
from vjplint.syntax.positions import byte_to_char
from vjplint.plans.residual_reads import (fresh_name, has_starred, is_generator, jit_static, loads, names_in,
                                          own_return_values, own_returns, referenced_elsewhere,
                                          rules_written_for_other_nondiff, stores, truthy_or_unknown)
from vjplint.model.semantic import FunctionNode, constant_value, walk

Loc = Tuple[int, int]
KEPT_NONDIFF = "VJP602"  # the rule that reads a moved argument's `None` as a forgotten cotangent
ARRAY_MODULES = (*ARRAY_NAMESPACES, "numpy.")
# Expressions that can never evaluate to a tuple/list (a bwd returning one is VJP307's bug).
BARE_VALUES = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Lambda, ast.JoinedStr, ast.Dict,
               ast.Set, ast.DictComp, ast.SetComp, ast.GeneratorExp)


class Refusal(Exception):
    """No fix can be offered; the message says why (it ends up in the diagnostic)."""


@dataclass(frozen=True)
class ReturnPlan:
    """How one `return` of a rule is rewritten."""

    loc: Loc  # the `return` keyword, or the lambda's body expression
    how: str  # "literal": edit the tuple in place; "index": index a name; "bind": bind, then index


@dataclass(frozen=True)
class RulePlan:
    """How one fwd or bwd rule is rewritten."""

    name: Optional[str]  # def name (None for a lambda)
    loc: Loc  # the def's name, or the `lambda` keyword
    is_lambda: bool
    returns: Tuple[ReturnPlan, ...]
    bind_name: str  # fresh local for "bind" returns


@dataclass(frozen=True)
class Plan:
    """Everything the libcst transform needs for one custom_vjp."""

    name: str
    moved: Tuple[int, ...]  # primal positions leaving nondiff
    creation: Loc  # the call holding the nondiff keywords (partial(...), custom_vjp(...), alias(...))
    collapse: bool  # `partial(custom_vjp)` with nothing left collapses to `custom_vjp`
    keywords: Tuple[Tuple[str, str, Tuple[Union[int, str], ...]], ...]  # (keyword, "nums"/"names", kept values)
    cleanup_names: FrozenSet[str]  # import names (`partial`, `functools`) that may become unused
    fwd: RulePlan
    fwd_moved: Tuple[str, ...]  # the names fwd saves: its parameters at the moved positions (or their copies)
    fwd_capture: Tuple[Tuple[str, str], ...]  # (copy, parameter) bound first in fwd, for parameters it rebinds
    bwd: RulePlan
    bwd_drop: Tuple[int, ...]  # bwd positional parameter indices to drop (the moved nondiff values)
    bwd_res_index: int  # index of bwd's residual parameter before dropping
    mode: str  # "single": bwd's residual param takes the moved name; "tuple": residuals are the moved
    #            values; "append": residuals become (old residuals, *moved)
    res_name: str  # bwd's new residual parameter name
    unpack: Tuple[str, ...]  # names bwd unpacks from res_name ("tuple"/"append")
    none_slots: Tuple[int, ...]  # indices in the new bwd output that are None, ascending
    d_old: int  # entries in bwd's output before the fix
    spans: Tuple[Tuple[Loc, Loc], ...] = ()  # (start, end) of creation, fwd and bwd (ast units)
    unsafe_reasons: Tuple[str, ...] = ()
    marked: Tuple[str, ...] = ()  # moved arguments whose `None` gets `# noqa: VJP602` (none_draws_vjp602)
    stale_comments: Tuple[str, ...] = ()  # comments on fwd and bwd returns the rewrite makes false, which go
    annotations: Tuple[Tuple[str, str, str], ...] = ()  # (def name, old, new): fwd's and bwd's `-> Tuple[...]`
    #            rewritten for the new residuals and cotangents (`bwd_return_annotation`, `fwd_return_annotation`)

    @property
    def safe(self) -> bool:
        return not self.unsafe_reasons

    @property
    def node_locs(self) -> Tuple[Loc, ...]:
        return (self.creation, self.fwd.loc, self.bwd.loc)


def lines_digest(lines: Sequence[str]) -> str:
    """What a plan carried with its fix was made from: the file's lines (`source_lines`, endings
    aside: a plan's locations are rows and columns). The writer plans again when the text's
    digest is another. Once per line table (the families of a big module share one). (hashlib is
    imported here: a file without a planned fix does without it, 3 ms of a one-file check.)"""
    import hashlib

    return digest_once(lines, lambda table: hashlib.blake2b(joined(table).encode("utf-8", "surrogatepass"),
                                                            digest_size=16).hexdigest())


def model_digest(model: FileModel) -> str:
    """`lines_digest` of the model's lines, once per file (`model.facts.of_model`)."""
    return lines_digest(model.lines)


def loc_of(model: FileModel, node: ast.AST) -> Loc:
    line = node.lineno  # type: ignore[attr-defined]
    text = model.lines[line - 1] if 0 < line <= len(model.lines) else ""
    return line, byte_to_char(text, node.col_offset)  # type: ignore[attr-defined]


def _def_loc(model: FileModel, fn: FunctionNode) -> Loc:
    if isinstance(fn, ast.Lambda):
        return loc_of(model, fn)
    # The name's column: after `def`/`async def` and whitespace on the def line.
    line = model.lines[fn.lineno - 1] if 0 < fn.lineno <= len(model.lines) else ""
    start = loc_of(model, fn)[1]
    index = line.find(fn.name, start)
    return fn.lineno, index if index >= 0 else start


def _span(node: ast.AST) -> Tuple[Loc, Loc]:
    return ((node.lineno, node.col_offset),  # type: ignore[attr-defined]
            (node.end_lineno or node.lineno, node.end_col_offset or 0))  # type: ignore[attr-defined]


def spans_overlap(a: Plan, b: Plan) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a.spans for s2, e2 in b.spans)


def find_derivative(model: FileModel, name: str, line: int) -> Optional[CustomDerivative]:
    for d in model.derivatives:
        if d.name == name and d.anchor.lineno == line:  # type: ignore[attr-defined]
            return d
    return None


def check_derivative(d: CustomDerivative, moved: Sequence[int]) -> Tuple[Tuple[int, ...], Signature, Registration,
                                                                     RuleFunction, RuleFunction]:
    """The planner's refusals about the derivative and its one `defvjp` registration, made alike
    for a rewrite in one file (`plan`) and across modules (`vjplint.fixes.cross_plan`): (the moved
    positions, sorted; the primal's signature; the registration; fwd and bwd as registered)."""
    moved = tuple(sorted(set(moved)))
    sig = d.signature
    if d.kind != "vjp" or d.primal is None or sig is None:
        raise Refusal("the primal function is not resolved in this file")
    if not moved or any(p not in d.nondiff for p in moved):
        raise Refusal("the moved positions are not nondiff positions")
    if sig.vararg is not None:
        raise Refusal(f"`{d.name}` takes *{sig.vararg}, so output positions depend on each call")
    if d.nondiff_unresolved:
        raise Refusal("nondiff_argnums is not a literal this tool can read")
    if len(d.registrations) != 1 or d.registrations[0].method != "defvjp":
        raise Refusal("there is not exactly one `defvjp(fwd, bwd)` registration in this file")
    registration = d.registrations[0]
    if registration.as_decorator:
        raise Refusal("`defvjp` is used as a decorator")
    if truthy_or_unknown(registration.keywords.get("symbolic_zeros")):
        raise Refusal("symbolic_zeros=True wraps differentiable fwd arguments in CustomVJPPrimal records")
    fwd, bwd = (r.as_registered() if r is not None else None for r in (d.rule("fwd"), d.rule("bwd")))
    if fwd is None or bwd is None:
        raise Refusal("`defvjp` does not name both fwd and bwd")
    return moved, sig, registration, fwd, bwd


def check_not_partial(role: str, rule: RuleFunction) -> None:
    if rule.bound_positional or rule.bound_keywords:
        raise Refusal(f"{role} is a functools.partial")


# The refusals about a resolved fwd or bwd, for the rule wherever it is defined (this file or,
# for vjplint.fixes.cross_plan, another of the run).
def check_bound_once(role: str, name: str, bindings: int) -> None:
    if bindings > 1:
        raise Refusal(f"{role} `{name}` is bound more than once, so it is unclear which one to rewrite")


def check_not_generator(role: str, node: ast.AST) -> None:
    if not isinstance(node, ast.Lambda) and is_generator(node):
        raise Refusal(f"{role} is a generator")


def check_distinct(fwd: ast.AST, bwd: ast.AST) -> None:
    if fwd is bwd:
        raise Refusal("fwd and bwd are the same function")


def shared_with(other: CustomDerivative) -> Refusal:
    return Refusal(f"fwd/bwd are shared with `{other.name}`, which would break")


def check_not_static(model: FileModel, d: CustomDerivative, moved: Tuple[int, ...], sig: Signature) -> None:
    """Refuses when a moved argument is marked static where the primal is jitted (in `model`)."""
    static = jit_static(model, d, moved)
    if static:
        raise Refusal(f"`{sig.positional[static[0][0]]}` is marked static in {static[0][1]}, so callers pass a "
                      f"Python value there, which a differentiable position rejects")


def plan(model: FileModel, d: CustomDerivative, moved: Sequence[int]) -> Plan:
    """The rewrite for moving `moved` out of `d`'s nondiff positions; raises Refusal."""
    moved, sig, registration, fwd, bwd = check_derivative(d, moved)
    for role, rule in (("fwd", fwd), ("bwd", bwd)):
        if rule.node is None or model.facts.grafted(rule.node):  # defined in another module (crossmodule.Graft)
            raise Refusal(_unresolved(model, role, rule))
        check_not_partial(role, rule)
        if isinstance(rule.expr, ast.Name):
            check_bound_once(role, rule.expr.id, len(model.index.lookup(rule.expr.id, model.index.scope_of(rule.expr))))
        check_not_generator(role, rule.node)
    assert fwd.node is not None and bwd.node is not None
    check_distinct(fwd.node, bwd.node)
    for other in model.rule_owners(fwd.node, bwd.node):
        if other is d:
            continue
        for role in ("fwd", "bwd"):
            r = other.rule(role)
            r = r.as_registered() if r is not None else None
            if r is not None and r.node is not None and r.node in (fwd.node, bwd.node):
                raise shared_with(other)
    for role, rule in (("fwd", fwd), ("bwd", bwd)):
        if rule.name and referenced_elsewhere(model, rule, registration.node):
            changes = "what it returns" if role == "fwd" else "its parameters"
            raise Refusal(f"{role} `{rule.name}` is also called or referenced outside `defvjp` in this file, "
                          f"and the rewrite changes {changes}")
    mismatch = rules_written_for_other_nondiff(d, bwd, sig)
    if mismatch:
        raise Refusal(mismatch)
    check_not_static(model, d, moved, sig)
    unsafe: List[str] = []
    marked: List[str] = []
    for p in moved:  # a `None` VJP602 would read as a forgotten cotangent: unsafe, and marked
        through = none_draws_vjp602(model, d, sig.positional[p])
        why = rewrite_none_draws_vjp602(model, d, fwd.node, bwd.node, p, sig.positional[p]) if through is None else None
        if why is not None:
            marked.append(sig.positional[p])
            unsafe.append(f"VJP602 would read the rewrite's `None` for `{sig.positional[p]}` ({why}): "
                          f"differentiating with respect to it raised before and gives zero after (its `None` keeps "
                          f"it never differentiated, marked `# noqa: {KEPT_NONDIFF}`)")
        if through is not None:
            marked.append(sig.positional[p])
            unsafe.append(f"the primal's output depends on `{sig.positional[p]}` (`{model.quote(through, 40)}`): "
                          f"differentiating with respect to it raised before and gives zero after (its `None` keeps "
                          f"it never differentiated, marked `# noqa: {KEPT_NONDIFF}` where that rule would read it)")
    return plan_rules(model, d, moved, sig, fwd, bwd, unsafe, marked=tuple(marked),
                      skip=lambda rule, role: bound_parameters(model, rule, role))


def plan_rules(model: FileModel, d: CustomDerivative, moved: Tuple[int, ...], sig: Signature, fwd: RuleFunction,
               bwd: RuleFunction, unsafe: List[str], *, marked: Tuple[str, ...] = (),
               skip: Callable[[RuleFunction, str], int] = lambda rule, role: 0,
               fwd_model: Optional[FileModel] = None, bwd_model: Optional[FileModel] = None) -> Plan:
    """The plan of the creation site (in `model`, the primal's file), fwd and bwd (in `fwd_model`
    and `bwd_model`, `model` when not given: a cross-module plan reads each rule in its own file)
    once the derivative's refusals are made; raises Refusal for what fwd or bwd cannot take.
    `skip`: how many leading parameters of a rule's def its registration binds (`self`)."""
    fwd_model = fwd_model or model
    bwd_model = bwd_model or model
    assert fwd.node is not None and bwd.node is not None
    creation, collapse, keywords, cleanup = _plan_creation(model, d, moved, sig)
    if d.is_alias:
        unsafe.append(f"`{d.name}` is made by an in-house wrapper")
    fwd_plan, fwd_moved, fwd_capture = _plan_fwd(fwd_model, d, fwd, moved, sig, unsafe, skip(fwd, "fwd"))
    nondiff = list(d.nondiff)
    bwd_skip = skip(bwd, "bwd")  # `self._f_bwd`: JAX passes what follows `self`
    bwd_drop = tuple(bwd_skip + nondiff.index(p) for p in moved)
    bwd_sig = bwd.signature
    assert bwd_sig is not None
    if bwd_sig.vararg is not None:
        raise Refusal(f"bwd takes *{bwd_sig.vararg}")
    res_index = bwd_skip + len(nondiff)
    if len(bwd_sig.positional) < res_index + 2:
        raise Refusal(f"bwd takes {len(bwd_sig.positional) - bwd_skip} positional parameters, not "
                      f"{res_index - bwd_skip + 2} (see VJP305)")
    bwd_moved = tuple(bwd_sig.positional[i] for i in bwd_drop)
    old_res = bwd_sig.positional[res_index]
    fwd_residuals = [_residual_of(r) for r in own_returns(fwd.node)]
    res_used = old_res != "_" and loads(bwd.node, old_res, bwd_model)
    if all(isinstance(r, ast.Constant) and r.value is None for r in fwd_residuals) and not res_used:
        mode = "single" if len(moved) == 1 else "tuple"
    else:
        mode = "append"
    stale = _stale_comments(fwd_model, fwd.node) if mode != "append" else ()
    taken = names_in(bwd.node, bwd_model)
    if mode == "single":
        res_name, unpack = bwd_moved[0], ()
    else:
        res_name = fresh_name(("res", "residuals", "res_"), taken - ({old_res} if mode == "tuple" else set()))
        unpack = bwd_moved if mode == "tuple" else (old_res, *bwd_moved)
    if isinstance(bwd.node, ast.Lambda):
        _check_lambda_substitution(bwd.node, {old_res, *bwd_moved} if mode != "single" else set())
    remaining = [p for p in range(len(sig.positional)) if p not in d.nondiff or p in moved]
    none_slots = tuple(remaining.index(p) for p in moved)
    d_old = len(sig.positional) - len(nondiff)
    bwd_plan = _plan_bwd(bwd_model, d, bwd, none_slots, d_old, unsafe)
    stale = (*stale, *_stale_bwd_comments(bwd_model, bwd.node, (*bwd_moved, *(sig.positional[p] for p in moved)),
                                          d_old))
    return Plan(
        name=d.name, moved=moved, creation=creation, collapse=collapse, keywords=keywords,
        cleanup_names=cleanup, fwd=fwd_plan, fwd_moved=fwd_moved, fwd_capture=fwd_capture, bwd=bwd_plan, bwd_drop=bwd_drop,
        bwd_res_index=res_index, mode=mode, res_name=res_name, unpack=unpack, none_slots=none_slots,
        d_old=d_old, spans=tuple(_span(n) for n in (d.creation, fwd.node, bwd.node)), unsafe_reasons=tuple(dict.fromkeys(unsafe)),
        marked=marked, stale_comments=stale,
        # bwd's and fwd's `-> tuple[...]`, each read in its own file (maxtext's pre_op_bwd kept
        # `-> tuple[jax.Array, common.MhcWeights]` over a 3-entry return)
        annotations=bwd_return_annotation(bwd_model, bwd.node, none_slots, d_old)
        + fwd_return_annotation(fwd_model, fwd.node, fwd_moved, mode),
    )


def _tuple_annotation(model: FileModel, fn: FunctionNode) -> Optional[Tuple[ast.Subscript, List[ast.expr]]]:
    """`fn`'s return annotation when it is `Tuple[A, B]`/`tuple[A, B]` on one line (no `...`)."""
    ann = getattr(fn, "returns", None)
    if not isinstance(ann, ast.Subscript) or ann.lineno != ann.end_lineno:
        return None
    if not (isinstance(ann.value, ast.Name) and ann.value.id in ("tuple", "Tuple")) and \
            (model.index.qualname(ann.value) or "") != "typing.Tuple":
        return None
    elts = list(ann.slice.elts) if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    if any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts):
        return None
    return ann, elts


# fwd's and bwd's return annotations written for the rewrite, where they list one type per entry:
# bwd's `-> Tuple[Array]` becomes `-> Tuple[None, Array]` (a moved argument's `None` first); fwd's
# `-> Tuple[Array, None]` saves the moved arguments now, typed as fwd's parameters are (`object` for
# one without an annotation). Others (`Tuple[Array, ...]`, an alias) stay as written.
def bwd_return_annotation(model: FileModel, bwd: FunctionNode, none_slots: Tuple[int, ...],
                          d_old: int) -> Tuple[Tuple[str, str, str], ...]:
    """bwd's annotation (`model` is the file holding bwd: a cross-module plan asks each rule's own file)."""
    quote = lambda n: model.quote(n, 10_000)  # noqa: E731
    found = _tuple_annotation(model, bwd) if not isinstance(bwd, ast.Lambda) else None
    if found is None or len(found[1]) != d_old:
        return ()
    ann, elts = found
    texts = iter(quote(e) for e in elts)
    new = [("None" if i in none_slots else next(texts)) for i in range(d_old + len(none_slots))]
    return ((bwd.name, quote(ann), f"{quote(ann.value)}[{', '.join(new)}]"),)  # type: ignore[union-attr]


def fwd_return_annotation(model: FileModel, fwd: FunctionNode, fwd_moved: Tuple[str, ...],
                          mode: str) -> Tuple[Tuple[str, str, str], ...]:
    """fwd's annotation (`model` is the file holding fwd)."""
    out: List[Tuple[str, str, str]] = []
    quote = lambda n: model.quote(n, 10_000)  # noqa: E731
    found = _tuple_annotation(model, fwd) if not isinstance(fwd, ast.Lambda) else None
    if found is not None and len(found[1]) == 2:
        ann, (primal_out, old_res) = found
        params = {a.arg: a.annotation for a in [*fwd.args.posonlyargs, *fwd.args.args]}  # type: ignore[union-attr]
        types = [quote(params[n]) if params.get(n) is not None else "object" for n in fwd_moved]
        base = quote(ann.value)
        if mode == "single":
            res = types[0]
        elif mode == "tuple":
            res = f"{base}[{', '.join(types)}]"
        else:
            res = f"{base}[{', '.join([quote(old_res), *types])}]"
        out.append((fwd.name, quote(ann), f"{base}[{quote(primal_out)}, {res}]"))  # type: ignore[union-attr]
    return tuple(out)


# -- the creation site -------------------------------------------------------------------
def _plan_creation(model: FileModel, d: CustomDerivative, moved: Tuple[int, ...],
                   sig: Signature) -> Tuple[Loc, bool, tuple, FrozenSet[str]]:
    creation = d.creation
    if not isinstance(creation, ast.Call):
        raise Refusal("the nondiff positions are not given at the definition")
    call = creation.func if isinstance(creation.func, ast.Call) else creation
    scope = model.index.scope_of(call)
    is_partial = model.index.qualname(call.func, scope) in PARTIAL
    found = {k.arg: k.value for k in call.keywords if k.arg is not None}
    if any(k.arg is None for k in call.keywords):
        raise Refusal("the nondiff positions are passed with `**kwargs`")
    moved_names = {sig.positional[p] for p in moved}
    keywords = []
    for keyword, value in found.items():
        if keyword == "nondiff_argnames" or (keyword != "nondiff_argnums" and keyword.endswith("argnames")):
            names = constant_value(model.index, value, scope)
            names = (names,) if isinstance(names, str) else names
            if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
                raise Refusal(f"`{keyword}` is not a literal this tool can read")
            keywords.append((keyword, "names", tuple(n for n in names if n not in moved_names)))
        elif keyword in ("nondiff_argnums",) or keyword == _alias_keyword(d, found):
            nums = constant_value(model.index, value, scope)
            if not isinstance(nums, (tuple, list)) or any(type(n) is not int or n not in d.nondiff for n in nums):
                raise Refusal(f"`{keyword}` has entries that are not valid positions (see VJP103)")
            keywords.append((keyword, "nums", tuple(n for n in nums if n not in moved)))
    if not keywords:
        raise Refusal("the nondiff positions are not given at the definition")
    left = [k for k in found if k not in {kw for kw, _, _ in keywords}]
    empty = all(not kept for _, _, kept in keywords)
    collapse = is_partial and empty and not left and len(call.args) == 1
    cleanup: Set[str] = set()
    if collapse:
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name):
            cleanup.add(root.id)
    return loc_of(model, call), collapse, tuple(keywords), frozenset(cleanup)


def _alias_keyword(d: CustomDerivative, found: Dict[str, ast.expr]) -> Optional[str]:
    """The keyword an in-house wrapper uses for nondiff positions (the collector mapped it)."""
    target = d.keywords.get("nondiff_argnums")
    for keyword, value in found.items():
        if value is target:
            return keyword
    return None


def _unresolved(model: FileModel, role: str, rule: RuleFunction) -> str:
    spelled = ast.unparse(rule.expr) if isinstance(rule.expr, (ast.Name, ast.Attribute)) else rule.name
    qualname = model.index.qualname(rule.expr) if isinstance(rule.expr, (ast.Name, ast.Attribute)) else None
    if qualname and "." in qualname and not qualname.startswith("builtins."):
        return f"{role} `{spelled}` comes from `{qualname.rsplit('.', 1)[0]}`, another file"
    return f"{role} {'`' + spelled + '` ' if spelled else ''}is not defined in this file"


# -- fwd --------------------------------------------------------------------------------
def _plan_fwd(model: FileModel, d: CustomDerivative, fwd: RuleFunction, moved: Tuple[int, ...], sig: Signature,
              unsafe: List[str], skip: int = 0) -> Tuple[RulePlan, Tuple[str, ...], Tuple[Tuple[str, str], ...]]:
    node = fwd.node
    assert node is not None
    fsig = model.signature(node)
    if len(fsig.positional) - skip < len(sig.positional):
        if fsig.vararg is not None:
            raise Refusal(f"fwd takes *{fsig.vararg}, so the moved arguments have no names there")
        raise Refusal(f"fwd takes {len(fsig.positional) - skip} positional parameters, not {len(sig.positional)} "
                      f"(see VJP303)")
    names = tuple(fsig.positional[skip + p] for p in moved)
    taken = names_in(node, model)
    captures = []
    for name in names:
        if stores(node, name, model):  # save the argument as it came in, before fwd rebinds it
            if isinstance(node, ast.Lambda):
                raise Refusal(f"the fwd lambda rebinds `{name}`, so its original value is not at hand to save")
            fresh = fresh_name((f"{name}_in", f"{name}_arg"), taken)
            taken.add(fresh)
            captures.append((fresh, name))
    saved = dict((original, fresh) for fresh, original in captures)
    returns = []
    for ret, value in own_return_values(node):
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            raise Refusal("a fwd `return` returns nothing (see VJP304)")
        if isinstance(value, (ast.Tuple, ast.List)) and not has_starred(value):
            if len(value.elts) != 2:
                raise Refusal(f"a fwd `return` has {len(value.elts)} entries, not a pair (see VJP304)")
            how = "literal"
        elif isinstance(value, BARE_VALUES):
            raise Refusal("a fwd `return` is not a (primal_out, residuals) pair (see VJP304)")
        elif isinstance(value, ast.Name):
            how = "index"
            unsafe.append("a fwd `return` returns a name, so the pair is indexed")
        else:
            how = "bind"
            unsafe.append("a fwd `return` is not a literal pair, so it is bound and indexed")
        returns.append(ReturnPlan(loc_of(model, ret), how))
    if not returns:
        raise Refusal("fwd has no `return`")
    rule = RulePlan(fwd.name if not isinstance(node, ast.Lambda) else None, _def_loc(model, node),
                    isinstance(node, ast.Lambda), tuple(returns), fresh_name(("fwd_out", "out"), taken))
    return rule, tuple(saved.get(n, n) for n in names), tuple(captures)


def bound_parameters(model: FileModel, rule: RuleFunction, role: str) -> int:
    """How many leading parameters of the rule's def the registration binds, as Python binds
    (docs/facts/scripts/jax_method_kinds.py): 1 for `self._f_bwd` (an instance method through
    `self`) or a classmethod through its class or an instance, 0 for a plain function, a
    staticmethod, or a method through its class (`Class._f_bwd`). Refuses what it cannot tell."""
    node, expr = rule.node, rule.expr
    if node is None or isinstance(node, ast.Lambda) or not isinstance(model.index.parent(node), ast.ClassDef):
        return 0
    decorators = {model.index.qualname(dec) for dec in node.decorator_list}
    if "builtins.staticmethod" in decorators or isinstance(expr, ast.Name):
        return 0  # a staticmethod, or the plain function named in its class body (`_f.defvjp(_fwd, _bwd)`)
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
        raise Refusal(f"{role} `{rule.name}` is a method reached other than through `self` or its class")
    if "builtins.classmethod" in decorators:
        return 1
    bindings = model.index.lookup(expr.value.id, model.index.scope_of(expr))
    if len(bindings) == 1 and bindings[0].kind == "class":
        return 0  # `Class._f_bwd`: a plain function
    if len(bindings) == 1 and bindings[0].kind == "param":
        owner = model.index.enclosing_function(bindings[0].node)
        params = [*owner.args.posonlyargs, *owner.args.args] if isinstance(owner, ast.FunctionDef) else []
        if params and params[0].arg == expr.value.id and isinstance(model.index.parent(owner), ast.ClassDef):
            return 1  # `self._f_bwd` in a method: `self` is bound
    raise Refusal(f"{role} `{rule.name}` is a method, and which of its parameters JAX passes is unclear here")


# A comment saying fwd saves nothing (`return x, None  # no residuals`): false once it saves the moved values.
# The comment patterns are compiled on first use (re's own cache keeps them): most runs plan no
# fix, and compiling them was a tenth of this module's import.
STALE_COMMENT = (r"#.*(\b(no|nothing|none|without|empty)\b.*\bresidual|\bresidual.*\b(none|nothing|empty)\b"
                 r"|\bnothing to (save|keep|store)\b|\bno\b.*\bto (save|keep|store)\b)")


# A comment on bwd's `return` that the rewrite makes false: the returned tuple's old length
# (`# a 1-tuple`), or, where bwd returned nothing, that nothing is differentiated.
STALE_BWD_COMMENT = r"#.*\b(1-tuple|one-tuple|(one|single)[- ]element|singleton)\b"
STALE_EMPTY_BWD_COMMENT = (r"#.*(\b(no|nothing|empty|none)\b.*\b(cotangents?|grad(ient)?s?|differentiab\w*"
                           r"|differentiate\w*|to return)\b|\bempty tuple\b)")
# ... or that a moved argument is nondiff (`# scale is nondiff: no cotangent`): it no longer is.
NONDIFF_WORDS = r"\b(nondiff\w*|non-diff\w*|non-differentiable|not differentiable|static)\b"


def _stale_comments(model: FileModel, fwd: FunctionNode) -> Tuple[str, ...]:
    """The end-of-line comments of fwd's `return` lines that say no residuals are saved."""
    return _return_comments(model, fwd, lambda comment: bool(re.match(STALE_COMMENT, comment, re.IGNORECASE)))


def _stale_bwd_comments(model: FileModel, bwd: FunctionNode, moved: Sequence[str], d_old: int) -> Tuple[str, ...]:
    """The end-of-line comments of bwd's `return` lines the rewrite makes false: one that gives
    the old tuple's length, one saying nothing is differentiated where bwd returned `()`, one
    calling a moved argument nondiff or static (it is a differentiable argument after it)."""
    def stale(comment: str) -> bool:
        if re.match(STALE_BWD_COMMENT, comment, re.IGNORECASE) or (
                d_old == 0 and re.match(STALE_EMPTY_BWD_COMMENT, comment, re.IGNORECASE)):
            return True
        return bool(re.search(NONDIFF_WORDS, comment, re.IGNORECASE)) and any(re.search(rf"\b{re.escape(m)}\b", comment) for m in moved)
    return _return_comments(model, bwd, stale)


def _return_comments(model: FileModel, fn: FunctionNode, stale: Callable[[str], bool]) -> Tuple[str, ...]:
    found = []
    for ret, _ in own_return_values(fn):
        line = model.lines[ret.end_lineno - 1] if 0 < (ret.end_lineno or 0) <= len(model.lines) else ""  # type: ignore[attr-defined]
        at = line.find("#")
        if at < 0 or any(q in line[:at] for q in "'\"") or "noqa" in line[at:].lower():
            continue
        if stale(line[at:].rstrip()):
            found.append(line[at:].rstrip())
    return tuple(dict.fromkeys(found))


def _residual_of(value: Optional[ast.expr]) -> Optional[ast.expr]:
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2 and not has_starred(value):
        return value.elts[1]
    return None


# -- bwd --------------------------------------------------------------------------------
def _plan_bwd(model: FileModel, d: CustomDerivative, bwd: RuleFunction, none_slots: Tuple[int, ...], d_old: int,
              unsafe: List[str]) -> RulePlan:
    node = bwd.node
    assert node is not None
    returns = []
    for ret, value in own_return_values(node):
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            raise Refusal("a bwd `return` returns None, not a tuple (see VJP307)")
        if isinstance(value, (ast.Tuple, ast.List)):
            if not has_starred(value):
                if len(value.elts) != d_old:
                    raise Refusal(f"a bwd `return` has {len(value.elts)} entries where {d_old} are expected "
                                  f"(see VJP306)")
                how = "literal"
            else:
                leading = next(i for i, e in enumerate(value.elts) if isinstance(e, ast.Starred))
                before = [slot - n for n, slot in enumerate(none_slots)]
                how = "literal" if all(b <= leading for b in before) else "bind"
                if how == "bind":
                    unsafe.append("a bwd `return` unpacks a starred value, so it is bound and indexed")
        elif isinstance(value, BARE_VALUES) or _is_array_call(model, value):
            raise Refusal("a bwd `return` is a bare value, not a tuple (see VJP307)")
        elif isinstance(value, ast.Name):
            how = "index"
            unsafe.append("a bwd `return` returns a name, so it is indexed")
        else:
            how = "bind"
            unsafe.append("a bwd `return` is not a tuple literal, so it is bound and indexed")
        returns.append(ReturnPlan(loc_of(model, ret), how))
    if not returns:
        raise Refusal("bwd has no `return`")
    return RulePlan(bwd.name if not isinstance(node, ast.Lambda) else None, _def_loc(model, node),
                    isinstance(node, ast.Lambda), tuple(returns), fresh_name(("cts", "cotangents", "cts_"),
                                                                         names_in(node, model)))


def _is_array_call(model: FileModel, value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    q = model.index.qualname(value.func) or ""
    return q.startswith(ARRAY_MODULES)


def _check_lambda_substitution(fn: ast.Lambda, names: Set[str]) -> None:
    """A lambda bwd reads residuals by index; nested rebinding of those names would break that."""
    for node in walk(fn.body):
        bound: Set[str] = set()
        if isinstance(node, ast.Lambda):
            bound = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound = {node.id}
        if bound & names:
            raise Refusal(f"the bwd lambda rebinds `{sorted(bound & names)[0]}` inside its body")
