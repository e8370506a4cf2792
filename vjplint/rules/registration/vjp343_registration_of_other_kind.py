from __future__ import annotations

import ast
from typing import Set

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule

# What each kind of custom derivative registers with; the other kind has none of these.
METHODS = {"vjp": frozenset({"defvjp"}), "jvp": frozenset({"defjvp", "defjvps"})}


class RegistrationOfOtherKind(Rule):
    """## What it does
    Flags `f.defjvp(...)`, `@f.defjvp` or `f.defjvps(...)` where `f` is a `jax.custom_vjp`, and
    `f.defvjp(...)` where `f` is a `jax.custom_jvp`: the registration of the other kind of custom
    derivative, in any spelling of the creator (decorator, `functools.partial(jax.custom_vjp,
    nondiff_argnums=...)`, the call form `jax.custom_vjp(impl)`), at module level, in a factory
    or in a method.

    ## Why is this bad?
    A `custom_vjp` object has no `defjvp` (a `custom_jvp` no `defvjp`), so the line raises when it
    runs, at import for module-level code, before any differentiation (measured on JAX 0.10.2,
    `docs/facts/scripts/hazard_registration_of_other_kind.py`; the custom_vjp object hands
    unknown attributes to the function it wraps, hence the message's type):

        AttributeError: 'function' object has no attribute 'defjvp'

    Swapping the creator is the usual slip: the rules were written for one kind and the
    decorator names the other.

    ## Example
    ```python
    @jax.custom_vjp
    def softclip(x):
        return jnp.tanh(x)

    @softclip.defjvp
    def softclip_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = jnp.tanh(x)
        return y, (1 - y ** 2) * t
    ```

    ## Use instead
    ```python
    @jax.custom_jvp
    def softclip(x):
        return jnp.tanh(x)
    ```

    ## Fix safety
    No fix: whether the creator or the rules are wrong is the author's choice.
    """

    CODE = "VJP343"
    NAME = "registration-of-other-kind"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def softclip(x):
    return jnp.tanh(x)

@softclip.defjvp
def softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x)
    return y, (1 - y ** 2) * t
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def softclip(x):
    return jnp.tanh(x)

@softclip.defjvp
def softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x)
    return y, (1 - y ** 2) * t
''']

    def check(self) -> None:
        seen: Set[ast.AST] = set()
        for node in self.model.index.of_type(ast.Attribute):
            if node.attr not in ("defvjp", "defjvp", "defjvps") or node in seen:
                continue
            if not isinstance(node.value, ast.Name) or \
                    len(self.model.index.lookup(node.value.id, self.model.index.scope_of(node))) != 1:
                continue  # a name bound more than once (a notebook's cells): which object it holds is unknown
            d = self.model.facts.derivative_named(node.value)
            if d is None or d.api != "jax" or d.kind not in METHODS or node.attr in METHODS[d.kind]:
                continue
            seen.add(node)
            other = "jvp" if d.kind == "vjp" else "vjp"
            top = self.model.facts.is_top_level(node)
            when = "importing this module raises" if top else "running this line raises"
            if other == "jvp":
                advice = (f"make `{d.name}` a `jax.custom_jvp` if this is a jvp rule `(primals, tangents)`, or "
                          f"register fwd and bwd with `{d.name}.defvjp(fwd, bwd)`")
            else:
                advice = (f"make `{d.name}` a `jax.custom_vjp` if these are fwd and bwd rules, or register a jvp "
                          f"rule with `@{d.name}.defjvp`")
            self.report(node, f"`{self.quote(node)}` registers {other} rules on `{d.name}`, a {d.label} "
                              f"(line {d.anchor.lineno}), which has no `{node.attr}`: {when} `AttributeError: "  # type: ignore[attr-defined]
                              f"'{'function' if d.primal is not None else '...'}' object has no attribute '{node.attr}'`, before any "
                              f"differentiation; {advice}")
