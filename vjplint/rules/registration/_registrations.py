"""Registrations by any spelling: which names a module gives custom-derivative rules
(`f.defvjp(...)`, `@f.defjvp`, `f.fwd = ...`, `getattr(f, "defvjp")`), registrations on a plain
function, and where a custom derivative is first used. VJP301 reads them to tell a custom
derivative that never gets its rules."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from vjplint.facts.crossmodule import is_top_level
from vjplint.model.file_model import CustomDerivative, FileModel

METHOD_KIND = {"defvjp": "vjp", "defjvp": "jvp", "defjvps": "jvp"}
RULE_ATTRIBUTES = {"fwd": "vjp", "bwd": "vjp", "jvp": "jvp", "jvps": "jvp"}
ROLE_NAME = re.compile(r"(^|_)(fwd|bwd|jvp|vjp)(_|$)", re.IGNORECASE)


@dataclass
class Mentions:
    """What the module's text says about registrations, by spelling."""

    registered: Dict[str, Set[str]]  # per kind ('vjp', 'jvp'): names given rules by a `def*` attribute
    by_hand: Set[str]  # names given rules by attribute assignment, getattr or setattr
    unknown: Set[str]  # kinds with a registration through a name or computed attribute we cannot follow
    equinox: Set[Tuple[str, str]]  # (name, 'def_fwd'|'def_bwd'|'def_jvp'); ("?", "") for another base


@dataclass
class Use:
    """Where a custom derivative is first used, and how: 'called' (`node` is the call), 'passed'
    (`node` is the name, `call` the transformation given it, or None), 'external' (used at
    `where` in another module of the run) or 'rules-beside' (`f_fwd` and `f_bwd` defined beside it)."""

    node: ast.AST
    how: str
    call: Optional[ast.Call] = None
    where: str = ""


@dataclass
class PlainRegistration:
    """`base.attr` (`node`, attr defvjp/defjvp/defjvps) on `fn`, a plain function: as a call or a
    decorator (`parent`); `made` is the custom derivative wrapping `fn` (`g = jax.custom_vjp(f)`)."""

    node: ast.Attribute
    base: str
    fn: ast.FunctionDef
    made: Optional[CustomDerivative]
    parent: Optional[ast.AST]


def mentions(model: FileModel) -> Mentions:
    """The module's registration mentions; a kind is unknown too when a name registered for it
    is none of the module's custom derivatives (a registration through another name may cover
    any of them) nor a plain function one of them wraps."""
    registered, by_hand, unknown = _registration_mentions(model)
    for kind in ("vjp", "jvp"):
        known = {d.name for d in model.derivatives}
        if registered[kind] - known - _wrapped_functions(model):
            unknown.add(kind)
    return Mentions(registered, by_hand, unknown, _equinox_mentions(model))


def _wrapped_functions(model: FileModel) -> Set[str]:
    """Plain functions a call-form custom derivative wraps (`g = jax.custom_vjp(f)`), bound
    once: `f.defvjp(...)` registers nothing (it raises), so it says nothing about `g`."""
    index = model.index
    out: Set[str] = set()
    for d in model.derivatives:
        fn = d.primal
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != d.name and not fn.decorator_list:
            bindings = index.lookup(fn.name, index.scope_of(fn))
            if len(bindings) == 1 and bindings[0].kind == "def":
                out.add(fn.name)
    return out


def use_in_project(model: FileModel, d: CustomDerivative) -> Optional[Use]:
    """In a run over several modules (none registers it): a call from another module, or, for
    a custom_vjp, `f_fwd` and `f_bwd` written beside it (rules meant for it, never registered)."""
    external = model.facts.external
    if external is None or not is_top_level(model, d.anchor):
        return None
    where = external.uses.get(d.name)
    if where:
        return Use(d.anchor, "external", where=where[0])
    if d.kind == "vjp" and d.api == "jax":
        scope = model.index.scope_of(d.anchor)
        rules = [f"{d.name}_{role}" for role in ("fwd", "bwd")]
        if all(model.index.lookup(r, scope) for r in rules):
            return Use(d.anchor, "rules-beside")
    return None


def rules_beside_in_function(model: FileModel, d: CustomDerivative) -> Optional[Use]:
    """A custom derivative made inside a function (a factory), with `f_fwd` and `f_bwd` (custom_vjp)
    or `f_jvp` (custom_jvp) defined in that same function and never read: rules written for it
    that nothing registers, and nothing else can (no other module or caller reaches a function's
    locals; a factory that hands a rule to its caller reads it, `return f, f_jvp`)."""
    if d.api != "jax" or is_top_level(model, d.anchor):
        return None
    found = model.index.resolve(d.name, model.index.scope_of(d.anchor))
    if found is None or found[0] is model.index.module_scope:
        return None
    scope = found[0]  # the function that binds the custom derivative's name
    for role in ("fwd", "bwd") if d.kind == "vjp" else ("jvp",):
        name = f"{d.name}_{role}"
        own = scope.bindings.get(name, [])
        if len(own) != 1 or own[0].kind != "def":
            return None
        if any(isinstance(n.ctx, ast.Load) for n in model.index.names(name)):
            return None  # read somewhere: registered, returned or passed on in a way we may not follow
    return Use(d.anchor, "rules-beside")


def plain_function_registrations(model: FileModel) -> List[PlainRegistration]:
    """`f.defvjp(...)` or `@f.defjvp` on a plain function: a function has no such attribute,
    so the module fails at import (docs/facts/crossmodule.md)."""
    index = model.index
    found: List[PlainRegistration] = []
    for node in index.of_type(ast.Attribute):
        if node.attr not in ("defvjp", "defjvp", "defjvps"):  # type: ignore[attr-defined]
            continue  # (each of these has a registration kind)
        kind = _registration_kind(node.attr)  # type: ignore[attr-defined]
        base = node.value  # type: ignore[attr-defined]
        if kind is None or node.attr not in ("defvjp", "defjvp", "defjvps") or not isinstance(base, ast.Name) \
                or not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            continue
        bindings = index.lookup(base.id, index.scope_of(node))
        if len(bindings) != 1 or bindings[0].kind != "def":
            continue
        fn = bindings[0].node
        made = model.derivative_for_node(fn)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.decorator_list \
                or (made is not None and made.name == base.id):
            continue
        parent = index.parent(node)
        if not (isinstance(parent, ast.Call) and parent.func is node) and not any(
                node is dec for dec in getattr(parent, "decorator_list", ())):
            continue
        found.append(PlainRegistration(node, base.id, fn, made, parent))  # type: ignore[arg-type]
    return found


def first_use(model: FileModel, d: CustomDerivative) -> Optional[Use]:
    """The first call of `d` outside its own rules, else the first time it is handed to a
    transformation (jax.grad, jit, ...)."""
    for site in d.call_sites:
        if not _inside_own_rules(model, d, site.call):
            return Use(site.call, "called")
    bound = {d.anchor, d.primal}
    for node in model.index.names(d.name):  # `ast.walk` order, without a walk per derivative
        if model.facts.is_transform_argument(node):
            scope = model.index.scope_of(node)
            if any(b.node in bound for b in model.index.lookup(node.id, scope)):
                parent = model.index.parent(node)
                return Use(node, "passed", parent if isinstance(parent, ast.Call) else None)
    return None


def _inside_own_rules(model: FileModel, d: CustomDerivative, node: ast.AST) -> bool:
    """Calls in the primal itself or in would-be rules (`*_fwd`, `*_jvp`, ...) are not uses."""
    for ancestor in model.index.ancestors(node):
        if ancestor is d.primal:
            return True
        name = getattr(ancestor, "name", "")
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)) and ROLE_NAME.search(name):
            return True
    return False


def _equinox_mentions(model: FileModel) -> Set[Tuple[str, str]]:
    """(name, method) for every `name.def_fwd`/`def_bwd`/`def_jvp` in the file; ("?", "") when the
    base is not a plain name (a registration we cannot attribute)."""
    found: Set[Tuple[str, str]] = set()
    for node in model.index.of_type(ast.Attribute):
        attr = node.attr  # type: ignore[attr-defined]
        if attr in ("def_fwd", "def_bwd", "def_jvp"):
            base = node.value  # type: ignore[attr-defined]
            found.add((base.id, attr) if isinstance(base, ast.Name) else ("?", ""))
    return found


def _registration_kind(attr: str) -> Optional[str]:
    """'vjp' for defvjp and variants (`defvjp_with_logs`), 'jvp' for defjvp/defjvps and variants."""
    if attr in METHOD_KIND:
        return METHOD_KIND[attr]
    if attr.startswith("def") and attr.isidentifier():
        return "vjp" if "vjp" in attr else "jvp" if "jvp" in attr else None
    return None


def _registration_mentions(model: FileModel) -> Tuple[Dict[str, Set[str]], Set[str], Set[str]]:
    """Names registered per kind (by spelling), names given rules by attribute assignment, and
    kinds with a registration we cannot attribute."""
    registered: Dict[str, Set[str]] = {"vjp": set(), "jvp": set()}
    unknown: Set[str] = set()
    by_hand: Set[str] = set()
    index = model.index
    for node in index.of_type(ast.Attribute):  # sets: the order of the three passes does not matter
        attr = node.attr  # type: ignore[attr-defined]
        if attr not in RULE_ATTRIBUTES and attr not in METHOD_KIND and not attr.startswith("def"):
            continue  # neither a rule set by hand nor a registration (`_registration_kind` is None)
        base = node.value  # type: ignore[attr-defined]
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if isinstance(node.ctx, ast.Store) and node.attr in RULE_ATTRIBUTES and name is not None:  # type: ignore[attr-defined]
            by_hand.add(name)  # `f.fwd = ...` sets a rule by hand
            continue
        kind = _registration_kind(node.attr)  # type: ignore[attr-defined]
        if kind is None:
            continue
        if name is None:
            unknown.add(kind)
        else:
            registered[kind].add(name)
    for node in index.of_type(ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr") \
                and len(node.args) >= 2:  # type: ignore[attr-defined]
            base, attr = node.args[0], node.args[1]  # type: ignore[attr-defined]
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            literal = isinstance(attr, ast.Constant) and isinstance(attr.value, str)
            if name is not None and (not literal or attr.value in RULE_ATTRIBUTES):  # type: ignore[union-attr]
                by_hand.add(name)  # `getattr(f, method)(...)`, `setattr(f, "fwd", ...)`
            parent = index.parent(node)
            if not literal and isinstance(parent, ast.Call) and parent.func is node:
                unknown.update(("vjp", "jvp"))  # `getattr(fn, method)(fwd, bwd)` may register anything
    for node in index.of_type(ast.Constant):
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, str) and (value in METHOD_KIND or value.startswith("def")) and _registration_kind(value):
            unknown.add(_registration_kind(node.value))  # type: ignore[arg-type,attr-defined]  # getattr(f, "defvjp")
    return registered, by_hand, unknown
