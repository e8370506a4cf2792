from __future__ import annotations

import ast

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class DefvjpAsDecorator(Rule):
    """## What it does
    Flags `@f.defvjp` (and `@f.defvjp(...)`, `@partial(f.defvjp, ...)`) used as a decorator on a
    `jax.custom_vjp`, and a call `f.defvjp(rules)` given one positional argument and no `bwd=`
    (a `(fwd, bwd)` tuple passed whole): census row E49.

    ## Why is this bad?
    `custom_vjp.defvjp(fwd, bwd)` takes both rules in one call and returns `None`. As a bare
    decorator it receives only the decorated function, so the module fails when it is imported:

        TypeError: custom_vjp.defvjp() missing 1 required positional argument: 'bwd'

    `@f.defvjp(fwd, bwd)` registers the rules but then calls `None` on the decorated function
    (`TypeError: 'NoneType' object is not callable`). The decorator form is right only for
    custom_jvp (`@f.defjvp` returns its argument), which is where the habit comes from.

    ## Example
    ```python
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    @f.defvjp
    def f_fwd(x):
        return jnp.sin(x), jnp.cos(x)
    ```

    ## Use instead
    ```python
    def f_fwd(x):
        return jnp.sin(x), jnp.cos(x)

    def f_bwd(cos_x, g):
        return (cos_x * g,)

    f.defvjp(f_fwd, f_bwd)
    ```

    ## Fix safety
    No fix: the bwd rule usually has to be written or found first.
    """

    CODE = "VJP302"
    NAME = "defvjp-as-decorator"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

@f.defvjp
def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), jnp.cos(x) * t
''']

    def check(self) -> None:
        self._one_argument()

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.is_alias:
            return
        for reg in d.registrations:
            if reg.method != "defvjp" or not reg.as_decorator:
                continue
            decorator = reg.rules[0].expr
            name = getattr(reg.node, "name", "?")
            form = f"`@{self.quote(decorator)}`"
            where = "(at import for module-level code)"
            if isinstance(decorator, ast.Call) and len(decorator.args) + len(decorator.keywords) >= 2:
                message = (f"{form} used as a decorator on `{name}`: defvjp registers the rules and returns "
                           f"None, so decorating `{name}` raises `TypeError: 'NoneType' object is not callable` "
                           f"{where}; call `{self.quote(decorator)}` as a statement and leave `{name}` "
                           f"undecorated")
            else:
                missing = "fwd" if isinstance(decorator, ast.Call) and any(
                    k.arg == "bwd" for k in decorator.keywords) else "bwd"
                message = (f"{form} used as a decorator on `{name}`: defvjp takes fwd and bwd in one call, so "
                           f"this raises `TypeError: {'CustomVjp' if d.api == 'nnx' else 'custom_vjp'}.defvjp() "
                           f"missing 1 required positional "
                           f"argument: '{missing}'` as soon as `{name}` is defined {where}; define `{name}` as a "
                           f"plain function and call `{d.name}.defvjp(fwd, bwd)` (only custom_jvp's `defjvp` "
                           f"works as a decorator)")
            self.report(decorator, message)

    def _one_argument(self) -> None:
        """`f.defvjp((fwd, bwd))` and `@partial(f.defvjp, ...)`: one rule where defvjp takes two.
        One pass over the module's calls (a test module holds hundreds of custom_vjps)."""
        decorators = {id(e) for fn in self.model.index.of_type(ast.FunctionDef) for e in fn.decorator_list}  # type: ignore[attr-defined]
        for call in self.model.index.of_type(ast.Call):
            assert isinstance(call, ast.Call)
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "defvjp":
                partial, target, args = False, func, call.args
            elif isinstance(func, (ast.Name, ast.Attribute)) and call.args and isinstance(call.args[0], ast.Attribute) \
                    and call.args[0].attr == "defvjp" and id(call) in decorators \
                    and self.model.index.qualname(func) == "functools.partial":
                partial, target, args = True, call.args[0], call.args[1:]
            else:
                continue
            if any(isinstance(a, ast.Starred) for a in args) or any(k.arg in (None, "fwd", "bwd") for k in call.keywords):
                continue
            if len(args) + (1 if partial else 0) != 1 or (not partial and id(call) in decorators):
                continue
            d = self.model.facts.derivative_named(target.value)
            if d is None or d.kind != "vjp" or d.is_alias:
                continue
            what = (f"`@{self.quote(call, 50)}` decorates one function" if partial else
                    f"`{self.quote(call, 50)}` passes one positional argument")
            self.report(call, (
                f"{what}, but `{d.name}.defvjp` takes fwd and bwd as two arguments, so this raises `TypeError: "
                f"custom_vjp.defvjp() missing 1 required positional argument: 'bwd'` where it runs (at import "
                f"for module-level code); call `{d.name}.defvjp(fwd, bwd)` with the two rules"))
