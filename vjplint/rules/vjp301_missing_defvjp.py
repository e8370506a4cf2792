from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import Applicability, Fix, Severity
from vjplint.facts.crossmodule import is_top_level
from vjplint.model.file_model import CustomDerivative, FileModel, Signature
from vjplint.syntax.positions import byte_to_char
from vjplint.rules.base import Rule

METHOD_KIND = {"defvjp": "vjp", "defjvp": "jvp", "defjvps": "jvp"}
RULE_ATTRIBUTES = {"fwd": "vjp", "bwd": "vjp", "jvp": "jvp", "jvps": "jvp"}
ROLE_NAME = re.compile(r"(^|_)(fwd|bwd|jvp|vjp)(_|$)", re.IGNORECASE)


class MissingDefvjp(Rule):
    """## What it does
    Flags a `jax.custom_vjp` that is used in this file but never given its rules with
    `f.defvjp(fwd, bwd)` (for `jax.custom_jvp`: `defjvp`/`defjvps`), and a `defvjp`/`defjvp`
    that passes `None` as a rule.

    To stay precise, a missing registration is reported only when all of these hold:
    - nothing in the file mentions `<name>.defvjp` (`.defjvp`/`.defjvps`), in any form: a call,
      a decorator, or `self.<name>.defvjp(...)`;
    - no registration in the file goes through another name (`g = f; g.defvjp(...)`, a loop
      over functions, `getattr(f, "defvjp")`): any such form silences the rule for the file;
    - no `getattr(f, name)(...)` with a computed name and no `setattr(f, "fwd", ...)`;
    - the function is used in this file: called (outside its own body and outside functions
      named like rules, `*_fwd`, `*_bwd`, `*_jvp`), or passed to `jax.grad`/`jit`/`vmap`/...
      A custom_vjp that is only defined (and perhaps exported) may be registered by the module
      that imports it, so it is left alone.

    In a run over several modules (the CLI on a tree; vjplint.project.cross_values), a registration in
    any module of the run counts (`from lib import f; f.defvjp(f_fwd, f_bwd)`), and a module-level
    custom_vjp that another module of the run refers to is also reported when it is called there,
    or when `f_fwd` and `f_bwd` are defined beside it and no module of the run registers them.
    Single-file lint (the Language Server) keeps the single-file answer.

    Also flags `f.defvjp(...)`, `f.defjvp(...)` or `@f.defjvp` where `f` is a plain function,
    bound once and undecorated: a function has no such attribute, so that line raises
    `AttributeError` (at import when it is at module level; docs/facts/crossmodule.md). That
    includes the function a call-form custom_vjp wraps (`g = jax.custom_vjp(impl)` then
    `impl.defvjp(...)`): the line raises, and `g`, called, is reported as never registered.

    `flax.nnx.custom_vjp` registers with `defvjp` as JAX does. `equinox.filter_custom_vjp` needs
    both `@f.def_fwd` and `@f.def_bwd` (`equinox.filter_custom_jvp`: `@f.def_jvp`), and equinox
    raises at the first call without them; `jax.custom_gradient` and linen's `nn.custom_vjp`
    (rules passed in the call) have no registration.

    ## Why is this bad?
    `custom_vjp.__call__` checks for its rules before anything else, so the first call raises,
    in every mode, eager included:

        AttributeError: No VJP defined for custom_vjp function f using defvjp.

    (`No JVP defined for custom_jvp function f using defjvp.` for custom_jvp.) `defvjp(fwd,
    None)` is accepted when registering and fails the same way at the first call.

    ## Example
    ```python
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        return jnp.sin(x), jnp.cos(x)

    def f_bwd(cos_x, g):
        return (cos_x * g,)

    y = f(x)  # AttributeError
    ```

    ## Use instead
    ```python
    f.defvjp(f_fwd, f_bwd)
    y = f(x)
    ```

    ## Fix safety
    For a custom_vjp, `f.defvjp(f_fwd, f_bwd)` is added on the line after the last of the
    primal, `f_fwd` and `f_bwd`, when all three are statements of the same block, `f_fwd` and
    `f_bwd` are plain functions bound once there, fwd takes the primal's positional parameters,
    bwd takes one per nondiff argument plus the residuals and the cotangent, and nothing at that
    block's level calls `f` before the new line. The fix is unsafe: the names say which
    functions are the rules, but only the author knows. On JAX (`fixtures/fix_small/`), the
    original raises `AttributeError: No VJP defined ...` at the first call and the fixed code
    runs under jit, vmap, grad, jit(grad) and vmap(grad). No fix for custom_jvp or when the rule
    functions are missing.
    """

    CODE = "VJP301"
    NAME = "missing-defvjp"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp", b"defvjp", b"defjvp")  # defvjp on a plain function
    FIX = "add `f.defvjp(f_fwd, f_bwd)` (unsafe)"

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def loss(x):
    return f(x).sum()
''', '''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), None)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (c * g,))

def loss(x):
    return f(x).sum()
''', '''
import jax

@jax.custom_vjp
def exported(x):
    return x  # registered by the module that imports it
''']

    def check(self) -> None:
        if not self.model.derivatives:  # what follows reads the file's mentions only for its derivatives
            self._plain_function_registrations()
            return
        registered, by_hand, unknown = _registration_mentions(self.model)
        for kind in ("vjp", "jvp"):
            known = {d.name for d in self.model.derivatives}
            if registered[kind] - known - self._wrapped_functions():
                unknown.add(kind)  # a registration through another name may cover any of them
        equinox_mentions = _equinox_mentions(self.model)
        self._plain_function_registrations()
        external = self.model.facts.external
        for d in self.model.derivatives:
            self._none_rules(d)
            if external is not None and is_top_level(self.model, d.anchor) and d.name in external.registered:
                continue  # another module of the run registers the rules
            if d.api == "custom_gradient":
                continue  # the function returns its own vjp: nothing to register
            if d.api == "equinox":
                self._equinox(d, equinox_mentions, registered, by_hand)
                continue
            if d.registrations or d.name in registered[d.kind] or d.name in by_hand or d.kind in unknown:
                continue
            use = self._first_use(d) or self._use_in_project(d)
            if use is not None:
                self._missing(d, use)

    def _wrapped_functions(self) -> Set[str]:
        """Plain functions a call-form custom derivative wraps (`g = jax.custom_vjp(f)`), bound
        once: `f.defvjp(...)` registers nothing (it raises), so it says nothing about `g`."""
        index = self.model.index
        out: Set[str] = set()
        for d in self.model.derivatives:
            fn = d.primal
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != d.name and not fn.decorator_list:
                bindings = index.lookup(fn.name, index.scope_of(fn))
                if len(bindings) == 1 and bindings[0].kind == "def":
                    out.add(fn.name)
        return out

    def _use_in_project(self, d: CustomDerivative) -> Optional[Tuple[ast.AST, str]]:
        """In a run over several modules (none registers it): a call from another module, or, for
        a custom_vjp, `f_fwd` and `f_bwd` written beside it (rules meant for it, never registered)."""
        external = self.model.facts.external
        if external is None or not is_top_level(self.model, d.anchor):
            return None
        where = external.uses.get(d.name)
        if where:
            return d.anchor, f"is used in another module of this run ({where[0]})"
        if d.kind == "vjp" and d.api == "jax":
            scope = self.model.index.scope_of(d.anchor)
            rules = [f"{d.name}_{role}" for role in ("fwd", "bwd")]
            if all(self.model.index.lookup(r, scope) for r in rules):
                return d.anchor, f"has `{rules[0]}` and `{rules[1]}` defined beside it"
        return None

    def _plain_function_registrations(self) -> None:
        """`f.defvjp(...)` or `@f.defjvp` on a plain function: a function has no such attribute,
        so the module fails at import (docs/facts/crossmodule.md)."""
        index = self.model.index
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
            made = self.model.derivative_for_node(fn)
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.decorator_list \
                    or (made is not None and made.name == base.id):
                continue
            parent = index.parent(node)
            if not (isinstance(parent, ast.Call) and parent.func is node) and not any(
                    node is dec for dec in getattr(parent, "decorator_list", ())):
                continue
            creator = "jax.custom_vjp" if node.attr == "defvjp" else "jax.custom_jvp"  # type: ignore[attr-defined]
            when = "importing this module raises" if is_top_level(self.model, node) else "running this line raises"
            if made is not None:  # `g = jax.custom_vjp(f)` then `f.defvjp(...)`: the rules belong on `g`
                self.report(node, f"`{base.id}.{node.attr}` registers rules on `{base.id}`, the plain function "  # type: ignore
                                  f"that `{made.name}` wraps (line {made.anchor.lineno}): a function has no "  # type: ignore
                                  f"`{node.attr}`, so {when} `AttributeError: 'function' object has no attribute "
                                  f"'{node.attr}'`, and `{made.name}` never gets its rules; "
                                  + (f"decorate the rule with `@{made.name}.{node.attr}`" if parent is not None
                                     and not isinstance(parent, ast.Call) else
                                     f"call `{made.name}.{node.attr}(...)`") + " instead")  # type: ignore
                continue
            self.report(node, f"`{base.id}.{node.attr}` registers rules on `{base.id}`, a plain function "  # type: ignore
                              f"(line {fn.lineno}, no `@{creator}`): a function has no `{node.attr}`, so {when}"  # type: ignore
                              f" `AttributeError: 'function' object has no attribute "
                              f"'{node.attr}'`; decorate `{base.id}` with `@{creator}`")  # type: ignore[attr-defined]

    def _equinox(self, d: CustomDerivative, mentions: Set[Tuple[str, str]], registered: Dict[str, Set[str]],
                 by_hand: Set[str]) -> None:
        """equinox registers fwd and bwd separately (`@f.def_fwd`, `@f.def_bwd`), a jvp with `@f.def_jvp`."""
        needed = ("def_fwd", "def_bwd") if d.kind == "vjp" else ("def_jvp",)
        have = {reg.method for reg in d.registrations}
        missing = [m for m in needed if m not in have and (d.name, m) not in mentions]
        if not missing or d.name in registered[d.kind] or d.name in by_hand or ("?", "") in mentions:
            return  # registered (also the deprecated `defvjp`), or through a name we cannot follow
        use = self._first_use(d)
        if use is None:
            return
        listed = " and ".join(f"`@{d.name}.{m}`" for m in missing)
        if d.kind == "vjp":
            error = f"RuntimeError \"`def_fwd` or `def_bwd` not yet called for {d.name}\""
            protocol = "fwd(perturbed, vjp_arg, *args) and bwd(residuals, grad_obj, perturbed, vjp_arg, *args)"
        else:
            error = "`AttributeError: No JVP defined for custom_jvp function fn_wrapper using defjvp.`"
            protocol = "the rule(primals, tangents, **kwargs), returning (out, t_out)"
        self.report(d.anchor, f"{d.label} `{d.name}` {use[1]} but this file has no {listed}, so calling it raises "
                              f"{error}, eager included; define the missing rule and register it with {listed} "
                              f"(equinox calls {protocol})")

    def _none_rules(self, d: CustomDerivative) -> None:
        for reg in d.registrations:
            if reg.method == "defjvps" or reg.as_decorator:
                continue  # defjvps(None, ...) is legal: a zero tangent for that argument
            roles = ("fwd", "bwd") if reg.method == "defvjp" else ("jvp",)
            for role, rule in zip(roles, reg.rules):
                if rule.is_none:
                    self.report(rule.expr, f"`{d.name}.{reg.method}` gets None as its {role} rule, so every call "
                                           f"of `{d.name}` raises {_no_rule_error(d)}; pass the {role} function")

    def _first_use(self, d: CustomDerivative) -> Optional[Tuple[ast.AST, str]]:
        for site in d.call_sites:
            if not self._inside_own_rules(d, site.call):
                return site.call, f"is called (line {site.call.lineno})"
        bound = {id(d.anchor), id(d.primal)}
        for node in self.model.index.names(d.name):  # `ast.walk` order, without a walk per derivative
            if self.model.facts.is_transform_argument(node):
                scope = self.model.index.scope_of(node)
                if any(id(b.node) in bound for b in self.model.index.lookup(node.id, scope)):
                    parent = self.model.index.parent(node)
                    how = self.quote(parent.func) if isinstance(parent, ast.Call) else "a transformation"
                    return node, f"is passed to `{how}` (line {node.lineno})"
        return None

    def _inside_own_rules(self, d: CustomDerivative, node: ast.AST) -> bool:
        """Calls in the primal itself or in would-be rules (`*_fwd`, `*_jvp`, ...) are not uses."""
        for ancestor in self.model.index.ancestors(node):
            if ancestor is d.primal:
                return True
            name = getattr(ancestor, "name", "")
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)) and ROLE_NAME.search(name):
                return True
        return False

    def _missing(self, d: CustomDerivative, use: Tuple[ast.AST, str]) -> None:
        if d.kind == "vjp":
            register = f"`{d.name}.defvjp(fwd, bwd)`"
            scope = self.model.index.scope_of(d.anchor)
            fwd, bwd = f"{d.name}_fwd", f"{d.name}_bwd"
            if self.model.index.lookup(fwd, scope) and self.model.index.lookup(bwd, scope):
                advice = f"register the rules defined here with `{d.name}.defvjp({fwd}, {bwd})`"
            else:
                advice = f"define fwd and bwd and register them with `{d.name}.defvjp({fwd}, {bwd})`"
        else:
            register = f"`{d.name}.defjvp(...)` or `{d.name}.defjvps(...)`"
            advice = f"write the jvp rule and register it with `@{d.name}.defjvp`"
        where = "no module of this run has" if self.model.facts.external is not None else "this file has no"
        self.report(d.anchor, f"custom_{d.kind} `{d.name}` {use[1]} but never gets its rules: {where} "
                              f"{register}, so calling it raises {_no_rule_error(d)} in every mode, eager included; "
                              f"{advice}", fix=self._registration_fix(d) if d.kind == "vjp" else None)

    def _registration_fix(self, d: CustomDerivative) -> Optional[Fix]:
        """Add `f.defvjp(f_fwd, f_bwd)` after the last of primal/fwd/bwd (see Fix safety)."""
        sig, index, lines = d.signature, self.model.index, self.model.lines
        if d.api != "jax" or d.primal is None or sig is None or sig.vararg or d.nondiff_unresolved \
                or d.bound_self or isinstance(d.primal, ast.Lambda):
            return None
        anchor = _statement(self.model, d.anchor)
        body = _block(self.model, anchor)
        scope = index.scope_of(d.anchor)
        rules: List[ast.stmt] = []
        for role, wanted in (("fwd", len(sig.positional)), ("bwd", len(d.nondiff) + 2)):
            bindings = index.lookup(f"{d.name}_{role}", scope)
            if len(bindings) != 1 or not isinstance(bindings[0].node, ast.FunctionDef):
                return None
            fn = bindings[0].node
            rule_sig = Signature.of(fn)
            if fn.decorator_list or rule_sig.vararg or len(rule_sig.positional) != wanted:
                return None
            rules.append(fn)
        statements = [anchor, _statement(self.model, d.primal), *rules]
        if body is None or any(_block(self.model, st) is not body for st in statements):
            return None
        last = max(statements, key=lambda st: body.index(st))
        end = last.end_lineno or last.lineno
        for site in d.call_sites:  # a call running at this block's level before the new line
            owner = _statement(self.model, site.call)
            if _block(self.model, owner) is body and body.index(owner) <= body.index(last):
                return None
        line = lines[last.lineno - 1]
        indent = line[: byte_to_char(line, last.col_offset)]
        text = f"{indent}{d.name}.defvjp({d.name}_fwd, {d.name}_bwd)"
        if end < len(lines):
            edit = (end + 1, 1, end + 1, 1, f"\n{text}\n")
        else:
            edit = (end, len(lines[end - 1]) + 1, end, len(lines[end - 1]) + 1, f"\n\n{text}")
        return self.editing(Applicability.UNSAFE, f"Add `{text.strip()}`", [edit])


def _statement(model: FileModel, node: ast.AST) -> ast.AST:
    """The statement holding `node` (a decorator's statement is its function)."""
    while not isinstance(node, ast.stmt):
        parent = model.index.parent(node)
        if parent is None:
            return node
        node = parent
    return node


def _block(model: FileModel, statement: ast.AST) -> Optional[List[ast.stmt]]:
    parent = model.index.parent(statement)
    for field in ("body", "orelse", "finalbody"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and any(s is statement for s in body):
            return body
    return None


def _no_rule_error(d: CustomDerivative) -> str:
    name = d.name if d.primal is None else getattr(d.primal, "name", "<lambda>")  # JAX names the primal
    if d.kind == "vjp":
        return f"`AttributeError: No VJP defined for custom_vjp function {name} using defvjp.`"
    return f"`AttributeError: No JVP defined for custom_jvp function {name} using defjvp.`"


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
