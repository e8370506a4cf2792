from __future__ import annotations

import ast
from typing import Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.model.jaxapi import PARTIAL
from vjplint.rules.base import Rule

# The keywords each registration method of JAX 0.10.2 takes (`inspect.signature`): `defvjp(fwd,
# bwd, symbolic_zeros=False, optimize_remat=False)`, `defjvp(jvp, symbolic_zeros=False)`,
# `defjvps(*jvps)`. The creator's options (`nondiff_argnums`, `nondiff_argnames`) are not among them.
ACCEPTED = {"defvjp": frozenset({"fwd", "bwd", "symbolic_zeros", "optimize_remat"}),
            "defjvp": frozenset({"jvp", "symbolic_zeros"}),
            "defjvps": frozenset()}
CREATOR_OPTIONS = frozenset({"nondiff_argnums", "nondiff_argnames"})
# What a creator's unknown keyword usually meant: `jax.jit`'s names, or a registration's option.
CREATOR_ADVICE = {"static_argnums": "nondiff_argnums", "static_argnames": "nondiff_argnames",
                  "symbolic_zeros": None, "optimize_remat": None}


class RegistrationUnknownKeyword(Rule):
    """## What it does
    Flags a keyword argument that the creator or registration method does not take: the
    creator `jax.custom_vjp`/`jax.custom_jvp` (decorator through `functools.partial`, or the call
    form) takes only `nondiff_argnums` and `nondiff_argnames`, so `static_argnums=(0,)` (the name
    `jax.jit` uses), `symbolic_zeros=True` or `optimize_remat=True` there raise; the wrappers
    keep their own contract: `flax.nnx.custom_vjp` takes `nondiff_argnums`, `graph` and
    `graph_updates` (not `nondiff_argnames`), `equinox.filter_custom_vjp` and
    `equinox.filter_custom_jvp` take the function alone (a migration that keeps
    `nondiff_argnums` raises), in any route to the creator (decorator, `partial`, call, an alias
    import); the registration: `f.defvjp(fwd, bwd,
    nondiff_argnums=(2,))`, `@partial(f.defjvp, nondiff_argnums=(0,))`, `f.defjvp(jvp,
    symbolic_zero=True)` (a misspelling), any keyword of `f.defjvps(...)`, on a `jax.custom_vjp`
    or `jax.custom_jvp` made in the module in any spelling (decorator, `functools.partial`, the
    call form, in a factory or a class body). `defvjp` takes `symbolic_zeros` and
    `optimize_remat`, `defjvp` takes `symbolic_zeros`, `defjvps` none.

    ## Why is this bad?
    The registration is a plain Python call, so the line raises when it runs, at import for
    module-level code, before any differentiation (measured on JAX 0.10.2,
    `fixtures/rules/VJP355`):

        TypeError: custom_jvp.defjvp() got an unexpected keyword argument 'nondiff_argnums'
        TypeError: custom_vjp.__new__() got an unexpected keyword argument 'static_argnums'
        TypeError: filter_custom_vjp.__init__() got an unexpected keyword argument 'nondiff_argnums'

    `nondiff_argnums` and `nondiff_argnames` belong to the creator: moved to the registration,
    they leave the custom function with no nondiff positions as well.

    ## Example
    ```python
    @jax.custom_jvp
    def scaled(n, x):
        return x * n

    @partial(scaled.defjvp, nondiff_argnums=(0,))
    def scaled_jvp(n, primals, tangents):
        ...
    ```

    ## Use instead
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def scaled(n, x):
        return x * n

    @scaled.defjvp
    def scaled_jvp(n, primals, tangents):
        ...
    ```

    ## Fix safety
    No fix: where the option belongs (the creator, or nowhere) is the author's choice.
    """

    CODE = "VJP355"
    NAME = "registration-unknown-keyword"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"defvjp", b"defjvp", b"custom_vjp", b"custom_jvp")

    INVALID = ['''
import jax

def double_fwd(x):
    return 2 * x, None

def double_bwd(n, res, g):
    return (2 * g,)

@jax.custom_vjp
def double(n, x):
    return 2 * x

double.defvjp(double_fwd, double_bwd, nondiff_argnums=(0,))
''']
    VALID = ['''
import jax

def double_fwd(x):
    return 2 * x, None

def double_bwd(res, g):
    return (2 * g,)

@jax.custom_vjp
def double(x):
    return 2 * x

double.defvjp(double_fwd, double_bwd, symbolic_zeros=False)
''']

    def check(self) -> None:
        self._creators()
        seen: Set[ast.AST] = set()
        for attribute in self.model.index.of_type(ast.Attribute):
            found = self._registration(attribute)  # type: ignore[arg-type]
            if found is None:
                continue
            method, d, call = found
            for keyword in call.keywords:
                if keyword.arg is None or keyword.arg in ACCEPTED[method] or keyword in seen:
                    continue
                seen.add(keyword)
                self.report(keyword, self._message(method, d, attribute, keyword.arg))  # type: ignore[arg-type]

    def _creators(self) -> None:
        """`@partial(jax.custom_vjp, static_argnums=(0,))`, `jax.custom_jvp(f, symbolic_zeros=True)`,
        `@partial(eqx.filter_custom_vjp, nondiff_argnums=(1,))`, `nnx.custom_vjp(f, nondiff_argnames=...)`:
        a keyword the creator's contract does not take (in-house wrappers keep their own)."""
        for d in self.model.derivatives:
            for keyword in self.model.facts.rejected_creator_keywords(d):
                self.report(keyword, self._creator_message(d, keyword.arg))  # type: ignore[arg-type]

    def _creator_message(self, d: CustomDerivative, name: str) -> str:
        top = self.model.facts.is_top_level(d.creation)
        when = "importing this module raises" if top else "running this definition raises"
        if d.api == "equinox":
            return self._equinox_message(d, name, when)
        if d.api != "jax":
            options = [f"`{k}`" for k in sorted(self.model.facts.creator_contract(d).keywords - {"fun", "fn"})]
            takes = ", ".join(options[:-1]) + f" and {options[-1]}" if len(options) > 1 else "".join(options)
            return (f"`{d.label}` takes {takes}, not `{name}`: {when} `TypeError: {d.label.rsplit('.', 1)[-1]}() got an "
                    f"unexpected keyword argument '{name}'`, before any differentiation; drop `{name}`, or spell the "
                    f"option {d.label} takes")
        where = "__new__" if d.kind == "vjp" else "__init__"
        method = "defvjp" if d.kind == "vjp" else "defjvp"
        if CREATOR_ADVICE.get(name, "") is None:
            advice = f"`{name}` is an option of `{method}`: give it there (`{d.name}.{method}(..., {name}=...)`)"
        elif name in CREATOR_ADVICE:
            advice = (f"`{name}` is `jax.jit`'s name; the creator's is `{CREATOR_ADVICE[name]}` (the positions "
                      f"that stay Python values and get no cotangent)")
        else:
            advice = f"drop `{name}`, or spell the option JAX takes"
        return (f"`jax.custom_{d.kind}` takes `nondiff_argnums` and `nondiff_argnames`, not `{name}`: {when} "
                f"`TypeError: custom_{d.kind}.{where}() got an unexpected keyword argument '{name}'`, before any "
                f"differentiation; {advice}")

    def _equinox_message(self, d: CustomDerivative, name: str, when: str) -> str:
        owner = d.label.split(".", 1)[-1]
        if name in CREATOR_OPTIONS:
            first = " (and differentiates only the first argument)" if d.kind == "vjp" else ""
            advice = (f"equinox has no `{name}`: drop it; equinox keeps every argument that is not an array "
                      f"static{first}, so pass the option as a plain Python value")
        else:
            advice = f"drop `{name}`"
        return (f"`{d.label}` takes only the function, not `{name}`: {when} `TypeError: {owner}.__init__() got an "
                f"unexpected keyword argument '{name}'`, before any differentiation; {advice}")

    def _registration(self, attribute: ast.Attribute) -> Optional[Tuple[str, CustomDerivative, ast.Call]]:
        """(method, derivative, the call) for `f.defvjp(...)`, `f.defjvp(...)`, `f.defjvps(...)` and
        `partial(f.defjvp, ...)` on a custom function of this module, of the method's kind."""
        if attribute.attr not in ACCEPTED:
            return None
        call = self.model.index.parent(attribute)
        if not isinstance(call, ast.Call) or call.func is not attribute and not (
                call.args and call.args[0] is attribute and self.model.index.qualname(call.func) in PARTIAL):
            return None
        d = self.model.facts.derivative_named(attribute.value)
        if d is None or d.api != "jax" or (attribute.attr == "defvjp") != (d.kind == "vjp"):
            return None  # a registration of the other kind is VJP343's
        return attribute.attr, d, call

    def _message(self, method: str, d: CustomDerivative, attribute: ast.Attribute, name: str) -> str:
        top = self.model.facts.is_top_level(attribute)
        when = "importing this module raises" if top else "running this line raises"
        takes = {"defvjp": "`fwd`, `bwd`, `symbolic_zeros` and `optimize_remat`", "defjvp": "`jvp` and `symbolic_zeros`",
                 "defjvps": "only the jvp functions, by position"}[method]
        owner = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        if name in CREATOR_OPTIONS:
            advice = (f"`{name}` is an option of the creator: give it there "
                      f"(`@functools.partial(jax.{owner}, {name}=...)`) and drop it here")
        else:
            advice = f"drop `{name}`, or spell the option JAX takes"
        return (f"`{self.quote(attribute)}` takes {takes}, not `{name}`: {when} `TypeError: {owner}.{method}() got an "
                f"unexpected keyword argument '{name}'`, before any differentiation; {advice}")
