"""Counting parameters and arguments the way JAX calls custom-derivative rules.

Facts (jax-facts sections 5-8): fwd is called with every primal argument positionally, defaults
filled in (`inspect.signature(...).bind(...).apply_defaults()`); bwd is called as
`bwd(*nondiff_in_sorted_order, residuals, cotangent)` and returns one entry per differentiable
positional argument, as a tuple or list; a jvp rule is called as `jvp(*nondiff, primals, tangents)`.

These functions compute; `vjplint.facts.Facts` memoises them per file (call them through
`model.facts`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import FrozenSet, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from vjplint.model.jaxapi import (CREATOR_KEYWORDS, JAX_JVP, JAX_VJP, LIBRARY_CREATORS, PARTIAL, SIGNATURE_KEEPING,
                                  canonical_creator)
from vjplint.model.file_model import CustomDerivative, FileModel, Registration, RuleFunction, Signature
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, constant_value
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query


@dataclass(frozen=True)
class Arity:
    """How many positional arguments a callable accepts: `required` up to `maximum` (None: `*args`)."""

    required: int
    maximum: Optional[int]
    names: Tuple[str, ...]  # positional parameter names left after binding
    defaulted: Tuple[str, ...] = ()
    vararg: Optional[str] = None
    bound: int = 0  # leading arguments bound by functools.partial or a bound method
    self_name: Optional[str] = None  # the bound `self`/`cls` of a method, if any
    partial_names: Tuple[str, ...] = ()  # parameters bound by functools.partial (positional or keyword)
    kwonly_required: Tuple[str, ...] = ()  # keyword-only parameters without a default, not bound: JAX never passes them

    def accepts(self, n: int) -> bool:
        return self.required <= n and (self.maximum is None or n <= self.maximum)

    def count_text(self) -> str:
        """'2 positional parameters', '1 to 3 ...', 'at least 1 ...'."""
        if self.maximum is None:
            return f"at least {plural(self.required, 'positional parameter')}"
        if self.required == self.maximum:
            return plural(self.maximum, "positional parameter")
        return f"{self.required} to {plural(self.maximum, 'positional parameter')}"

    def binding_text(self) -> str:
        """' besides `self`', ' after functools.partial binds `fn`', or ''."""
        parts = []
        if self.self_name:
            parts.append(f" besides `{self.self_name}`")
        if self.partial_names:
            parts.append(" after functools.partial binds " + ", ".join(f"`{n}`" for n in self.partial_names))
        return ",".join(parts)

    def params_text(self) -> str:
        names = [f"{n}=…" if n in self.defaulted else n for n in self.names]
        if self.vararg:
            names.append(f"*{self.vararg}")
        return f"({', '.join(names)})"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def function_arity(fn: FunctionNode, bound: int = 0, bound_keywords: Sequence[str] = ()) -> Optional[Arity]:
    """Arity of `fn` after `bound` leading positional arguments and `bound_keywords` are bound."""
    sig = Signature.of(fn)
    defaulted = set(sig.positional[len(sig.positional) - sig.n_defaults:])
    names = list(sig.positional)
    if bound > len(names) and not sig.vararg:
        return None  # the partial itself is broken; another problem
    names = names[bound:]
    cut = next((i for i, n in enumerate(names) if n in bound_keywords), None)
    if cut is not None:
        # A keyword-bound parameter stops positional filling; later ones can only come by keyword.
        if any(n not in defaulted and n not in bound_keywords for n in names[cut:]):
            return None
        names = names[:cut]
        kwonly = tuple(n for n in sig.kwonly if n not in sig.defaults and n not in bound_keywords)
        return Arity(sum(n not in defaulted for n in names), len(names), tuple(names),
                     tuple(n for n in names if n in defaulted), None, bound, kwonly_required=kwonly)
    required = sum(n not in defaulted for n in names)
    maximum = None if sig.vararg else len(names)
    kwonly = tuple(n for n in sig.kwonly if n not in sig.defaults and n not in bound_keywords)
    return Arity(required, maximum, tuple(names), tuple(n for n in names if n in defaulted), sig.vararg, bound,
                 kwonly_required=kwonly)


def _decorator_names(model: FileModel, fn: FunctionNode) -> List[str]:
    """The names of `fn`'s decorators, less the module's own forwarding ones (`forwarding_decorator`)."""
    decorators = getattr(fn, "decorator_list", [])
    return [q for dec, q in zip(decorators, _names_of(model, decorators))
            if not (isinstance(dec, ast.Name) and model.facts.forwarding_decorator(dec))]


def _names_of(model: FileModel, decorators: List[ast.expr]) -> List[str]:
    """Each decorator's name: a call's callee (`jax.default_matmul_precision("float32")`), a
    `functools.partial`'s function (`partial(jax.jit, static_argnames=...)`), "?" when unknown."""
    result = []
    for decorator in decorators:
        target = decorator
        if isinstance(decorator, ast.Call):
            q = model.index.qualname(decorator.func)
            target = decorator.args[0] if q in PARTIAL and decorator.args else decorator.func
        result.append(model.index.qualname(target) or "?")
    return result


def _innermost(model: FileModel, expr: ast.expr, depth: int = 0) -> Tuple[Optional[ast.expr], int, Tuple[str, ...]]:
    """Strip `functools.partial` layers and simple name aliases; (callee, bound positional, bound keywords)."""
    if depth > 4:
        return None, 0, ()
    if isinstance(expr, ast.Call):
        if model.index.qualname(expr.func) in PARTIAL and expr.args:
            if any(isinstance(a, ast.Starred) for a in expr.args) or any(k.arg is None for k in expr.keywords):
                return None, 0, ()
            inner, n, kws = _innermost(model, expr.args[0], depth + 1)
            return inner, n + len(expr.args) - 1, kws + tuple(k.arg for k in expr.keywords if k.arg)
        return None, 0, ()
    if isinstance(expr, ast.Name):
        bindings = model.index.lookup(expr.id, model.index.scope_of(expr))
        if len(bindings) != 1:
            return None, 0, ()  # conditional or re-bound definitions: unknown
        b = bindings[0]
        if b.kind == "assign" and isinstance(b.value, (ast.Call, ast.Name, ast.Lambda)):
            return _innermost(model, b.value, depth + 1)
    return expr, 0, ()


def rule_arity(model: FileModel, rule: RuleFunction) -> Optional[Arity]:
    """Positional arguments the rule accepts as JAX calls it; None when not statically known."""
    if rule.node is None or rule.is_none:
        return None
    callee, bound, keywords = _innermost(model, rule.expr)
    if callee is None:
        return None
    fn = rule.node
    partial_bound = bound
    decorators = _decorator_names(model, fn)
    if any(q not in SIGNATURE_KEEPING and q != "builtins.classmethod" for q in decorators):
        return None
    owner = model.index.parent(fn)
    is_method = isinstance(owner, ast.ClassDef)
    if is_method and len(model.index.scopes[owner].bindings.get(fn.name, [])) != 1:  # type: ignore[union-attr]
        return None  # property setters, overloads, redefinitions
    if is_method and isinstance(callee, ast.Attribute):
        via_instance = _is_instance_access(model, callee)
        if via_instance is None:
            return None
        if "builtins.classmethod" in decorators or (via_instance and "builtins.staticmethod" not in decorators):
            bound += 1
    elif "builtins.classmethod" in decorators:
        return None
    arity = function_arity(fn, bound, keywords)
    if arity is None:
        return None
    positional = model.signature(fn).positional
    self_name = positional[0] if bound > partial_bound and positional else None
    skip = 1 if self_name else 0
    partial_names = tuple(positional[skip:bound]) + tuple(k for k in keywords if k in positional)
    return replace(arity, self_name=self_name, partial_names=partial_names)


def _is_instance_access(model: FileModel, attr: ast.Attribute) -> Optional[bool]:
    """True for `self.m`, False for `ClassName.m`, None otherwise."""
    if not isinstance(attr.value, ast.Name):
        return None
    bindings = model.index.lookup(attr.value.id, model.index.scope_of(attr))
    if len(bindings) != 1:
        return None
    if bindings[0].kind == "class":
        return False
    if bindings[0].kind == "param":
        owner = model.index.parent(model.index.parent(bindings[0].node))  # arg -> arguments -> def
        return "builtins.classmethod" not in _decorator_names(model, owner)  # type: ignore[arg-type]
    return None


def primal_signature(model: FileModel, d: CustomDerivative) -> Optional[Signature]:
    """The primal's signature, or None when a decorator applied before custom_vjp may change it."""
    fn = d.primal
    if fn is None:
        return None
    decorators = list(getattr(fn, "decorator_list", []))
    if d.anchor in decorators:
        decorators = decorators[decorators.index(d.anchor) + 1:]  # applied before custom_vjp
    elif d.anchor is fn:
        decorators = []
    own = d.signature
    for decorator, q in zip(decorators, _names_of(model, decorators)):
        if q == "functools.wraps" and own is not None and not own.vararg and not own.kwarg:
            continue  # JAX binds by the wrapped function's signature, which a wrapper with named parameters mirrors
        if isinstance(decorator, ast.Name) and model.facts.forwarding_decorator(decorator):
            continue
        if q not in SIGNATURE_KEEPING and not (q == "builtins.classmethod" and d.bound_self):
            return None  # unknown: arity rules stay silent rather than count an empty signature
    return d.signature  # without the bound `self`/`cls` for `jax.custom_vjp(self._f)`


def nondiff_positions(model: FileModel, d: CustomDerivative) -> Optional[Tuple[int, ...]]:
    """Sorted nondiff positions when every entry is a valid index; None otherwise (VJP103's
    cases, where what the author meant and what JAX does differ, are left to VJP103)."""
    if d.nondiff_unresolved:
        return None
    if d.api in ("nnx", "equinox", "custom_gradient"):
        return d.nondiff  # nnx: the int entries (the collector skips DiffState); the others have none
    if "nondiff_argnums" in d.keywords:
        value = constant_value(model.index, d.keywords["nondiff_argnums"])
        if not isinstance(value, (tuple, list)):  # a bare int: JAX ignores 0 and crashes on others (VJP103)
            return None
        sig = model.facts.primal_signature(d)
        for item in value:
            if type(item) is not int or item < 0:
                return None
            if sig is not None and not sig.vararg and item >= len(sig.positional):
                return None
    return d.nondiff


def primal_arg_counts(model: FileModel, d: CustomDerivative) -> Optional[FrozenSet[int]]:
    """Every number of positional arguments JAX binds for the primal (defaults filled in).

    A single value without `*args`. With `*args` the in-file call sites decide, but only when
    the function cannot be called from elsewhere (private or local) and no call hides its
    arguments (`f(*xs)`, `f(**kw)`)."""
    sig = model.facts.primal_signature(d)
    if sig is None:
        return None
    if not sig.vararg:
        return frozenset({len(sig.positional)})
    if not (d.name.startswith("_") or d.enclosing is not None) or not d.call_sites or _escapes(model, d):
        return None
    counts = set()
    own = {d.primal, *(r.node for reg in d.registrations for r in reg.rules if r.node is not None)}
    for site in d.call_sites:
        call = site.call
        if any(f in own for f in _enclosing_functions(model, call)):
            continue  # `f(*args)` inside its own rules forwards the arguments; it does not decide them
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        counts.add(max(len(call.args) + site.positional_offset, len(sig.positional)))
    return frozenset(counts) or None


def _enclosing_functions(model: FileModel, node: ast.AST) -> Iterator[ast.AST]:
    for ancestor in model.index.ancestors(node):
        if isinstance(ancestor, FUNCTION_TYPES):
            yield ancestor


def primal_arg_count(model: FileModel, d: CustomDerivative) -> Optional[int]:
    counts = model.facts.primal_arg_counts(d)
    return next(iter(counts)) if counts is not None and len(counts) == 1 else None


@query
def forwarding_decorator(model: FileModel, name: ast.Name) -> bool:
    """`name` is a module-level decorator of the module's own that keeps the signature: it takes
    one function, `fn`, and returns a wrapper made with `@functools.wraps(fn)` that takes
    `(*args, **kwargs)` and calls `fn(*args, **kwargs)` (a profiling or named-scope decorator).
    `inspect.signature`, by which JAX binds the arguments, follows `__wrapped__` to `fn`."""
    bindings = model.index.lookup(name.id, model.index.scope_of(name))
    if len(bindings) != 1 or not isinstance(bindings[0].node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    outer = bindings[0].node
    params = outer.args
    if len(params.args) != 1 or params.vararg or params.kwarg or params.kwonlyargs or outer.decorator_list:
        return False
    fn = params.args[0].arg
    returned = {r.value.id for r in walk(outer) if isinstance(r, ast.Return) and isinstance(r.value, ast.Name)}
    for inner in outer.body:
        if not isinstance(inner, ast.FunctionDef) or inner.name not in returned or len(returned) != 1:
            continue
        wraps = any(isinstance(dec, ast.Call) and model.index.qualname(dec.func) == "functools.wraps"
                    and len(dec.args) == 1 and isinstance(dec.args[0], ast.Name) and dec.args[0].id == fn
                    for dec in inner.decorator_list)
        a = inner.args
        if not wraps or len(inner.decorator_list) != 1 or a.args or a.posonlyargs or a.kwonlyargs \
                or a.vararg is None or a.kwarg is None:
            return False
        return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == fn
                   and len(c.args) == 1 and isinstance(c.args[0], ast.Starred)
                   and isinstance(c.args[0].value, ast.Name) and c.args[0].value.id == a.vararg.arg
                   and len(c.keywords) == 1 and c.keywords[0].arg is None
                   and isinstance(c.keywords[0].value, ast.Name) and c.keywords[0].value.id == a.kwarg.arg
                   for c in walk(inner))
    return False


def differentiable_names(model: FileModel, d: CustomDerivative) -> Optional[Tuple[str, ...]]:
    """Names of the D positions bwd returns cotangents for (`args[i]` for `*args` extras)."""
    facts = model.facts
    k, nondiff, sig = facts.primal_arg_count(d), facts.nondiff_positions(d), facts.primal_signature(d)
    if k is None or nondiff is None or sig is None:
        return None
    names = [sig.positional[i] if i < len(sig.positional) else f"{sig.vararg}[{i - len(sig.positional)}]"
             for i in range(k)]
    return tuple(n for i, n in enumerate(names) if i not in nondiff)


def _escapes(model: FileModel, d: CustomDerivative) -> bool:
    """True when the derivative's name is used other than being called or registered."""
    calls = {s.call.func for s in d.call_sites}
    # the whole module: only its names of that spelling (the index's table), not a walk per derivative
    for node in walk(d.enclosing) if d.enclosing is not None else model.index.names(d.name):
        if isinstance(node, ast.Name) and node.id == d.name and isinstance(node.ctx, ast.Load):
            parent = model.index.parent(node)
            if node in calls:
                continue
            if isinstance(parent, ast.Attribute) and parent.attr in ("defvjp", "defjvp", "defjvps"):
                continue
            return True
    return False


_FWD_NAME = re.compile(r"fwd|forward", re.IGNORECASE)
_BWD_NAME = re.compile(r"bwd|backward|(^|_)rev(erse)?(_|$)", re.IGNORECASE)  # JAX's own code says `f_rev`


def _name_role(rule: RuleFunction) -> Optional[str]:
    name = rule.name or ""
    fwd, bwd = bool(_FWD_NAME.search(name)), bool(_BWD_NAME.search(name))
    return "fwd" if fwd and not bwd else "bwd" if bwd and not fwd else None


def swap_evidence(model: FileModel, d: CustomDerivative, fwd: RuleFunction, bwd: RuleFunction) -> Optional[str]:
    """Why `defvjp(first, second)` looks like `defvjp(bwd, fwd)`; None when it does not."""
    if fwd.is_none or bwd.is_none:
        return None
    first_role, second_role = _name_role(fwd), _name_role(bwd)
    if first_role == "bwd" and second_role == "fwd":
        return f"the first is named `{fwd.name}` and the second `{bwd.name}`"
    if first_role == "fwd" or second_role == "bwd":
        return None  # names say the order is right
    facts = model.facts
    k, nondiff = facts.primal_arg_count(d), facts.nondiff_positions(d)
    first, second = facts.rule_arity(fwd), facts.rule_arity(bwd)
    if k is None or nondiff is None or first is None or second is None:
        return None
    nd2 = len(nondiff) + 2
    if k == nd2:
        return None  # arities cannot tell them apart
    if first.accepts(nd2) and not first.accepts(k) and second.accepts(k) and not second.accepts(nd2):
        return (f"the first takes {first.count_text()} {first.params_text()}, as many as bwd receives, and the "
                f"second {second.count_text()} {second.params_text()}, as many as fwd receives")
    return None


def is_placeholder(fn: Optional[FunctionNode]) -> bool:
    """A stub that is never meant to run: `...`, `pass`, `raise ...` or `assert False` (after a
    docstring). Tests register such rules when only the primal is exercised."""
    if fn is None:
        return False
    if isinstance(fn, ast.Lambda):
        return isinstance(fn.body, ast.Constant) and fn.body.value is Ellipsis
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, (ast.Pass, ast.Raise)):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return True
    return isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant) and not stmt.test.value


# -- registrations ---------------------------------------------------------------------------
class VjpRules(NamedTuple):
    """One call-form `defvjp` registration with its fwd and bwd (None when missing)."""

    registration: Registration
    fwd: Optional[RuleFunction]
    bwd: Optional[RuleFunction]


def vjp_rules(d: CustomDerivative) -> List[VjpRules]:
    """Every call-form `defvjp` registration of `d`, with its fwd and bwd: JAX's protocol, which nnx
    and linen share (equinox's and custom_gradient's differ: `equinox_rules`, `custom_gradient_vjps`)."""
    if d.kind != "vjp" or d.api not in JAX_COUNTING:
        return []
    return [VjpRules(reg, reg.rules[0] if len(reg.rules) > 0 else None, reg.rules[1] if len(reg.rules) > 1 else None)
            for reg in d.registrations if reg.method == "defvjp" and not reg.as_decorator]


def checked_vjp_rules(model: FileModel, d: CustomDerivative) -> List[VjpRules]:
    """`vjp_rules` minus registrations whose rules look swapped (VJP309 reports those), with
    placeholder rules (`lambda *_: ...`, `assert False`) replaced by None: they never run."""
    checked = []
    for reg, fwd, bwd in model.facts.vjp_rules(d):
        if fwd is not None and bwd is not None and model.facts.swap_evidence(d, fwd, bwd) is not None:
            continue
        checked.append(VjpRules(reg, None if fwd is None or is_placeholder(fwd.node) else fwd,
                                None if bwd is None or is_placeholder(bwd.node) else bwd))
    return checked


def jvp_rules(d: CustomDerivative) -> List[Tuple[Registration, RuleFunction]]:
    """Every `defjvp` rule of a custom_jvp (decorator or call form; equinox's `def_jvp`, whose
    rule JAX's protocol without nondiff describes), stubs excluded."""
    if d.kind != "jvp":
        return []
    return [(reg, reg.rules[0]) for reg in d.registrations
            if reg.method in ("defjvp", "def_jvp") and reg.rules and not reg.rules[0].is_none
            and not is_placeholder(reg.rules[0].node)]


# `custom_jvp.defjvp(self, jvp, symbolic_zeros=False)`: the flag's position in the call form
DEFJVP_SYMBOLIC_ZEROS_POSITION = 1


def defjvp_symbolic_zeros(model: FileModel, reg: Registration) -> Tuple[Optional[bool], Optional[ast.expr]]:
    """Whether a `defjvp` registration passes `symbolic_zeros` true, with the flag's expression:
    `f.defjvp(rule, symbolic_zeros=True)`, `f.defjvp(rule, True)` or the decorator
    `@partial(f.defjvp, symbolic_zeros=True)` (docs/facts/scripts/hazard_symbolic_zero_tangent.py
    measures both). `(False, None)` when it does not (`@f.defjvp` cannot take the keyword), `(None,
    None)` when it cannot be told (`**kwargs`, `*args`, a value not known statically)."""
    if reg.method != "defjvp":
        return False, None
    if isinstance(reg.node, ast.Call):
        call: Optional[ast.Call] = reg.node
        position: Optional[int] = DEFJVP_SYMBOLIC_ZEROS_POSITION
    elif reg.as_decorator:
        return False, None
    else:  # `@partial(f.defjvp, ...)`: the partial call is the rule's expression
        expr = reg.rules[-1].expr if reg.rules else None
        call = expr if isinstance(expr, ast.Call) else None
        position = None  # partial's positional arguments are the method and the rule
    if call is None:
        return None, None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None, None
    flag = next((k.value for k in call.keywords if k.arg == "symbolic_zeros"), None)
    if flag is None and position is not None and len(call.args) > position:
        flag = call.args[position]
    if flag is None:
        return False, None
    value = flag.value if isinstance(flag, ast.Constant) else constant_value(model.index, flag)
    if value is None:
        return None, None
    return bool(value), (flag if value else None)


def rules_of(d: CustomDerivative) -> List[Tuple[str, RuleFunction]]:
    """Every resolved rule of every registration with its role ("fwd", "bwd", "jvp"), each
    function once."""
    seen: Set[int] = set()
    found = []
    for reg in d.registrations:
        roles = {"defvjp": ("fwd", "bwd"), "def_fwd": ("fwd",), "def_bwd": ("bwd",)}.get(
            reg.method, ("jvp",) * len(reg.rules))
        for role, rule in zip(roles, reg.rules):
            if rule.node is not None and rule.node not in seen:
                seen.add(rule.node)
                found.append((role, rule))
    return found


def decorated_rule_arity(model: FileModel, rule: RuleFunction) -> Optional[Arity]:
    """Arity of a `@f.defjvp` rule: `defjvp` returns the function itself, so only the other
    decorators matter (they must keep the signature)."""
    fn = rule.node
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for decorator in fn.decorator_list:
        if isinstance(decorator, ast.Attribute) and decorator.attr in ("defjvp", "def_jvp", "def_fwd", "def_bwd"):
            continue
        if _names_of(model, [decorator])[0] not in SIGNATURE_KEEPING:
            return None
    return function_arity(fn)


def nondiff_keyword(model: FileModel, d: CustomDerivative, position: int) -> str:
    """'nondiff_argnums' or 'nondiff_argnames', whichever put `position` there."""
    if "nondiff_argnames" in d.keywords and d.primal is not None:
        names = constant_value(model.index, d.keywords["nondiff_argnames"])
        names = (names,) if isinstance(names, str) else names or ()
        sig = d.signature
        if sig is not None and position < len(sig.positional) and sig.positional[position] in names:
            from_argnums = constant_value(model.index, d.keywords.get("nondiff_argnums", ast.Constant(None)))
            if not (isinstance(from_argnums, (tuple, list)) and position in from_argnums):
                return "nondiff_argnames"
    return "nondiff_argnums"


# -- protocols per API (docs/facts/README.md) --------------------------------------------------
# APIs whose fwd/bwd JAX's counting describes: fwd gets every primal argument, bwd
# `(*nondiff, residuals, g)` and returns one entry per other argument (linen counts `mdl` as 0).
JAX_COUNTING = ("jax", "nnx", "linen")
_CALLERS = {"jax": "JAX", "nnx": "nnx.custom_vjp", "linen": "nn.custom_vjp", "equinox": "equinox",
            "custom_gradient": "jax.custom_gradient"}
# nnx's simple mode passes `updates_g` by keyword to a bwd that names it (flax's `filter_kwargs`).
NNX_UPDATES = "updates_g"


def caller(d: CustomDerivative) -> str:
    """Who calls the rules, for messages: 'JAX', 'nnx.custom_vjp', 'equinox'..."""
    return _CALLERS.get(d.api, "JAX")


def bwd_arity(model: FileModel, d: CustomDerivative, rule: Optional[RuleFunction]) -> Optional[Arity]:
    """`rule_arity` as the API calls bwd: nnx's simple mode (or an unknown mode) fills a parameter
    named `updates_g` by keyword, so it is neither positional nor a missing keyword-only one."""
    arity = model.facts.rule_arity(rule)
    if arity is None or d.api != "nnx" or d.mode == "default":
        return arity
    if NNX_UPDATES in arity.kwonly_required:
        arity = replace(arity, kwonly_required=tuple(k for k in arity.kwonly_required if k != NNX_UPDATES))
    if arity.names and arity.names[-1] == NNX_UPDATES and arity.vararg is None:
        last_required = NNX_UPDATES not in arity.defaulted
        arity = replace(arity, names=arity.names[:-1], required=arity.required - last_required,
                        maximum=None if arity.maximum is None else arity.maximum - 1)
    return arity


@query(memo=False)
def nnx_pytree_g(d: CustomDerivative) -> bool:
    """nnx's default mode (or an unknown one) passes bwd `g = (input_updates_g, out_g)`, not the
    output cotangent: nothing about g's type follows from the primal's output."""
    return d.api == "nnx" and d.mode != "simple"


@query(memo=False)
def bwd_structure_error(d: CustomDerivative, jax_error: str, mismatch: str = "lengths of tuple") -> str:
    """The error a wrongly structured bwd return raises under this API (`mismatch`: flax's words)."""
    flax_error = f"`ValueError: pytree structure error: different {mismatch} at key path` (flax's check)"
    if d.api == "nnx" and d.mode == "default":
        return flax_error
    if d.api == "nnx" and d.mode == "either":
        return f"{jax_error} (in nnx's default graph mode {flax_error})"
    return jax_error


@query(memo=False)
def fwd_not_pair_error(d: CustomDerivative, jax_error: str) -> str:
    """The error a fwd that does not return (out, residuals) raises under this API."""
    if d.api == "nnx":
        return "`ValueError: too many values to unpack (expected 2)` (or `not enough values`)"
    if d.api == "linen":
        return "`ValueError: not enough values to unpack (expected 2, got 1)` (or `too many values`)"
    return jax_error


class EquinoxRules(NamedTuple):
    """The rules of an `eqx.filter_custom_vjp`, each from its `def_fwd`/`def_bwd` (None when absent),
    or from the deprecated `defvjp(fwd, bwd)` (`legacy`), which equinox calls as JAX's fwd and as
    `bwd(residuals, g, vjp_arg, *args)`."""

    fwd: Optional[RuleFunction]
    bwd: Optional[RuleFunction]
    legacy: bool = False


def equinox_rules(d: CustomDerivative) -> Optional[EquinoxRules]:
    if d.api != "equinox" or d.kind != "vjp":
        return None
    fwd, bwd = d.rule("fwd"), d.rule("bwd")
    legacy = False
    if fwd is None and bwd is None:
        reg = next((r for r in d.registrations if r.method == "defvjp" and len(r.rules) == 2 and not r.as_decorator),
                   None)
        if reg is not None:
            fwd, bwd, legacy = reg.rules[0], reg.rules[1], True
    return EquinoxRules(None if fwd is None or is_placeholder(fwd.node) else fwd,
                        None if bwd is None or is_placeholder(bwd.node) else bwd, legacy)


def equinox_rule_arity(model: FileModel, rule: Optional[RuleFunction]) -> Optional[Arity]:
    """Arity of an equinox rule: `@f.def_fwd` decorates (and returns None, which is legal), so
    only the other decorators matter; a call-form rule counts as any rule."""
    if rule is None or rule.node is None:
        return None
    if isinstance(rule.node, ast.Lambda):
        return model.facts.rule_arity(rule)  # `f.def_bwd(lambda ...)`, `f.defvjp(fwd, lambda ...)`: nothing decorates it
    if isinstance(rule.expr, ast.expr) and rule.expr is not rule.node and not (
            isinstance(rule.node, (ast.FunctionDef, ast.AsyncFunctionDef)) and rule.expr in rule.node.decorator_list):
        return model.facts.rule_arity(rule)
    return model.facts.decorated_rule_arity(rule)


def equinox_rule_args(model: FileModel, d: CustomDerivative, role: str, legacy: bool = False) -> Optional[int]:
    """Positional arguments equinox passes: fwd `(perturbed, vjp_arg, *args)`, bwd `(residuals,
    grad_obj, perturbed, vjp_arg, *args)` (keywords go by keyword); through the deprecated `defvjp`
    (`legacy`): fwd `(vjp_arg, *args)`, bwd `(residuals, g, vjp_arg, *args)`. Known only when every
    call passes the primal's positional parameters: no defaults, no `*args`."""
    sig = model.facts.primal_signature(d)
    if sig is None or sig.vararg or sig.n_defaults or not sig.positional:
        return None
    if legacy:
        return len(sig.positional) + (0 if role == "fwd" else 2)
    return len(sig.positional) + (1 if role == "fwd" else 3)


class GradientPair(NamedTuple):
    """One `return out, vjp_fn` of a `jax.custom_gradient` function."""

    node: ast.AST  # the return statement (the lambda body for a lambda)
    value: Optional[ast.expr]
    vjp: Optional[RuleFunction]  # the vjp function, when it resolves in the primal


def custom_gradient_returns(model: FileModel, d: CustomDerivative) -> List[GradientPair]:
    """Each return of a custom_gradient primal, with its vjp function resolved where the primal
    defines it (a lambda in the return, or a local def or lambda)."""
    fn = d.primal
    if d.api != "custom_gradient" or fn is None:
        return []
    found = []
    for node, value in model.facts.returns_of(fn):
        vjp = None
        if isinstance(value, ast.Tuple) and len(value.elts) == 2:
            vjp = _local_function(model, fn, value.elts[1])
        found.append(GradientPair(node, value, vjp))
    return found


def _local_function(model: FileModel, fn: FunctionNode, expr: ast.expr) -> Optional[RuleFunction]:
    if isinstance(expr, ast.Lambda):
        return RuleFunction(expr, expr, None)
    if not isinstance(expr, ast.Name):
        return None
    bindings = model.index.lookup(expr.id, model.index.scope_of(expr))
    if len(bindings) != 1 or model.index.enclosing_function(bindings[0].node) is not fn:
        return None  # only the primal's own one definition is known to be what is returned
    b = bindings[0]
    if b.kind == "def" and not getattr(b.node, "decorator_list", None):
        return RuleFunction(expr, b.node, expr.id)  # type: ignore[arg-type]
    if b.kind == "assign" and isinstance(b.value, ast.Lambda):
        return RuleFunction(expr, b.value, expr.id)
    return None


class CreatorContract(NamedTuple):
    """What a creator takes where it is called: the creating call (`@partial(eqx.filter_custom_vjp,
    ...)`, `nnx.custom_vjp(f, ...)`, `@nnx.custom_vjp(...)`), the creator's qualified name and the
    keywords its signature has (`jaxapi.CREATOR_KEYWORDS`)."""

    call: ast.Call
    creator: str
    keywords: FrozenSet[str]


@query
def creator_contract(model: FileModel, d: CustomDerivative) -> Optional[CreatorContract]:
    """The contract of the creator `d` was made by, in any route that passes it keywords (a decorator
    call, `functools.partial`, the call form); None for an in-house wrapper (its own keywords) or a
    creation that passes none."""
    call = d.creation
    if d.is_alias or d.via or not isinstance(call, ast.Call) or d.api not in CREATOR_KEYWORDS:
        return None
    index = model.index
    scope = index.scope_of(call)
    head = call.args[0] if call.args and index.qualname(call.func, scope) in PARTIAL else call.func
    creator = canonical_creator(index.qualname(head, scope))
    if creator is None or not (creator in LIBRARY_CREATORS or creator in JAX_VJP or creator in JAX_JVP):
        return None
    return CreatorContract(call, creator, CREATOR_KEYWORDS[d.api])


@query
def rejected_creator_keywords(model: FileModel, d: CustomDerivative) -> Tuple[ast.keyword, ...]:
    """The keywords `d`'s creating call passes that its creator does not take: `nondiff_argnums` to
    `eqx.filter_custom_vjp` (equinox has none), `nondiff_argnames` to `nnx.custom_vjp`,
    `symbolic_zeros` to `jax.custom_jvp` (a registration's option). Each raises a TypeError where the
    creator runs, before any differentiation."""
    contract = model.facts.creator_contract(d)
    if contract is None:
        return ()
    return tuple(k for k in contract.call.keywords if k.arg is not None and k.arg not in contract.keywords)
