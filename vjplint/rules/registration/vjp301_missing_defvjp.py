from __future__ import annotations

import ast
from typing import List, Optional

from vjplint.diagnostics import Applicability, Edit, Fix, Position, Severity
from vjplint.rules.registration._registrations import (Mentions, Use, first_use, mentions, plain_function_registrations,
                                         rules_beside_in_function, use_in_project)
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule
from vjplint.rules.helpers import block_of, statement_of
from vjplint.syntax.positions import byte_to_char


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
      that imports it, so it is left alone. One made inside a function (a factory) with its
      rules beside it (`f_fwd` and `f_bwd`, or `f_jvp`) that nothing reads is reported too:
      no caller can reach them to register them.

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
        said = mentions(self.model)  # vjplint.rules.registration._registrations: every spelling of a registration
        registered, by_hand, unknown = said.registered, said.by_hand, said.unknown
        self._plain_function_registrations()
        external = self.model.facts.external
        for d in self.model.derivatives:
            self._none_rules(d)
            if external is not None and self.model.facts.is_top_level(d.anchor) and d.name in external.registered:
                continue  # another module of the run registers the rules
            if d.api == "custom_gradient":
                continue  # the function returns its own vjp: nothing to register
            if d.api == "equinox":
                self._equinox(d, said)
                continue
            if d.registrations or d.name in registered[d.kind] or d.name in by_hand or d.kind in unknown:
                continue
            use = first_use(self.model, d) or use_in_project(self.model, d) or rules_beside_in_function(self.model, d)
            if use is not None:
                self._missing(d, self._use(d, use))

    def _use(self, d: CustomDerivative, use: Use) -> str:
        """How `d` is used, for the messages."""
        if use.how == "called":
            return f"is called (line {use.node.lineno})"  # type: ignore[attr-defined]
        if use.how == "passed":
            how = self.quote(use.call.func) if use.call is not None else "a transformation"
            return f"is passed to `{how}` (line {use.node.lineno})"  # type: ignore[attr-defined]
        if use.how == "external":
            return f"is used in another module of this run ({use.where})"
        if d.kind == "jvp":
            return f"has `{d.name}_jvp` defined beside it"
        return f"has `{d.name}_fwd` and `{d.name}_bwd` defined beside it"

    def _plain_function_registrations(self) -> None:
        for found in plain_function_registrations(self.model):
            node, base, fn, made, parent = found.node, found.base, found.fn, found.made, found.parent
            creator = "jax.custom_vjp" if node.attr == "defvjp" else "jax.custom_jvp"
            when = "importing this module raises" if self.model.facts.is_top_level(node) else "running this line raises"
            if made is not None:  # `g = jax.custom_vjp(f)` then `f.defvjp(...)`: the rules belong on `g`
                self.report(node, f"`{base}.{node.attr}` registers rules on `{base}`, the plain function "
                                  f"that `{made.name}` wraps (line {made.anchor.lineno}): a function has no "  # type: ignore
                                  f"`{node.attr}`, so {when} `AttributeError: 'function' object has no attribute "
                                  f"'{node.attr}'`, and `{made.name}` never gets its rules; "
                                  + (f"decorate the rule with `@{made.name}.{node.attr}`" if parent is not None
                                     and not isinstance(parent, ast.Call) else
                                     f"call `{made.name}.{node.attr}(...)`") + " instead")
                continue
            self.report(node, f"`{base}.{node.attr}` registers rules on `{base}`, a plain function "
                              f"(line {fn.lineno}, no `@{creator}`): a function has no `{node.attr}`, so {when}"
                              f" `AttributeError: 'function' object has no attribute "
                              f"'{node.attr}'`; decorate `{base}` with `@{creator}`")

    def _equinox(self, d: CustomDerivative, said: Mentions) -> None:
        """equinox registers fwd and bwd separately (`@f.def_fwd`, `@f.def_bwd`), a jvp with `@f.def_jvp`."""
        needed = ("def_fwd", "def_bwd") if d.kind == "vjp" else ("def_jvp",)
        have = {reg.method for reg in d.registrations}
        missing = [m for m in needed if m not in have and (d.name, m) not in said.equinox]
        if not missing or d.name in said.registered[d.kind] or d.name in said.by_hand or ("?", "") in said.equinox:
            return  # registered (also the deprecated `defvjp`), or through a name we cannot follow
        use = first_use(self.model, d)
        if use is None:
            return
        listed = " and ".join(f"`@{d.name}.{m}`" for m in missing)
        if d.kind == "vjp":
            error = f"RuntimeError \"`def_fwd` or `def_bwd` not yet called for {d.name}\""
            protocol = "fwd(perturbed, vjp_arg, *args) and bwd(residuals, grad_obj, perturbed, vjp_arg, *args)"
        else:
            error = "`AttributeError: No JVP defined for custom_jvp function fn_wrapper using defjvp.`"
            protocol = "the rule(primals, tangents, **kwargs), returning (out, t_out)"
        self.report(d.anchor, f"{d.label} `{d.name}` {self._use(d, use)} but this file has no {listed}, so calling "
                              f"it raises {error}, eager included; define the missing rule and register it with "
                              f"{listed} (equinox calls {protocol})")

    def _none_rules(self, d: CustomDerivative) -> None:
        for reg in d.registrations:
            if reg.method == "defjvps" or reg.as_decorator:
                continue  # defjvps(None, ...) is legal: a zero tangent for that argument
            roles = ("fwd", "bwd") if reg.method == "defvjp" else ("jvp",)
            for role, rule in zip(roles, reg.rules):
                if rule.is_none:
                    self.report(rule.expr, f"`{d.name}.{reg.method}` gets None as its {role} rule, so every call "
                                           f"of `{d.name}` raises {_no_rule_error(d)}; pass the {role} function")

    def _missing(self, d: CustomDerivative, used: str) -> None:
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
            rule = f"{d.name}_jvp"
            if self.model.index.lookup(rule, self.model.index.scope_of(d.anchor)):
                advice = f"register the rule defined here with `{d.name}.defjvp({rule})` (or `@{d.name}.defjvp` on it)"
            else:
                advice = f"write the jvp rule and register it with `@{d.name}.defjvp`"
        where = "no module of this run has" if self.model.facts.external is not None else "this file has no"
        self.report(d.anchor, f"custom_{d.kind} `{d.name}` {used} but never gets its rules: {where} "
                              f"{register}, so calling it raises {_no_rule_error(d)} in every mode, eager included; "
                              f"{advice}", fix=self._registration_fix(d) if d.kind == "vjp" else None)

    def _registration_fix(self, d: CustomDerivative) -> Optional[Fix]:
        """Add `f.defvjp(f_fwd, f_bwd)` after the last of primal/fwd/bwd (see Fix safety)."""
        sig, index, lines = d.signature, self.model.index, self.model.lines
        if d.api != "jax" or d.primal is None or sig is None or sig.vararg or d.nondiff_unresolved \
                or d.bound_self or isinstance(d.primal, ast.Lambda):
            return None
        anchor = statement_of(self.model, d.anchor)
        body = block_of(self.model, anchor)
        scope = index.scope_of(d.anchor)
        rules: List[ast.stmt] = []
        for role, wanted in (("fwd", len(sig.positional)), ("bwd", len(d.nondiff) + 2)):
            bindings = index.lookup(f"{d.name}_{role}", scope)
            if len(bindings) != 1 or not isinstance(bindings[0].node, ast.FunctionDef):
                return None
            fn = bindings[0].node
            rule_sig = self.model.signature(fn)
            if fn.decorator_list or rule_sig.vararg or len(rule_sig.positional) != wanted:
                return None
            rules.append(fn)
        statements = [anchor, statement_of(self.model, d.primal), *rules]
        if body is None or any(block_of(self.model, st) is not body for st in statements):
            return None
        last = max(statements, key=lambda st: body.index(st))
        end = last.end_lineno or last.lineno
        for site in d.call_sites:  # a call running at this block's level before the new line
            owner = statement_of(self.model, site.call)
            if block_of(self.model, owner) is body and body.index(owner) <= body.index(last):
                return None
        line = lines[last.lineno - 1]
        indent = line[: byte_to_char(line, last.col_offset)]
        text = f"{indent}{d.name}.defvjp({d.name}_fwd, {d.name}_bwd)"
        if end < len(lines):
            edit = Edit(f"\n{text}\n", Position(end + 1, 1), Position(end + 1, 1))
        else:
            edit = Edit(f"\n\n{text}", Position(end, len(lines[end - 1]) + 1), Position(end, len(lines[end - 1]) + 1))
        return self.editing(Applicability.UNSAFE, f"Add `{text.strip()}`", [edit])


def _no_rule_error(d: CustomDerivative) -> str:
    name = d.name if d.primal is None else getattr(d.primal, "name", "<lambda>")  # JAX names the primal
    if d.kind == "vjp":
        return f"`AttributeError: No VJP defined for custom_vjp function {name} using defvjp.`"
    return f"`AttributeError: No JVP defined for custom_jvp function {name} using defjvp.`"
