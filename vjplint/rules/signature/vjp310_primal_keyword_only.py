from __future__ import annotations

import ast
from typing import Iterator, List, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, Signature
from vjplint.rules.base import Rule

RESOLVE_ERROR = "The following keyword arguments could not be resolved to positions"


class PrimalKeywordOnly(Rule):
    """## What it does
    Flags a `jax.custom_vjp`/`jax.custom_jvp` primal whose keyword-only parameters or
    `**kwargs` are used: a call in this module (or a `functools.partial`) that passes a
    keyword-only parameter or a `**kwargs` entry by keyword, and any keyword-only parameter
    without a default (no call can succeed). A keyword-only parameter with a default that no
    caller passes is fine: JAX then leaves it at its default. Calls inside `pytest.raises` or
    `assertRaises` (tests that want the error) are not reported, nor `f(x, **options)` (names
    unknown) unless `options` is the `**kwargs` of the function making the call (a wrapper, `def
    layer(x, **opts): return f(x, **opts)`) and a call of that function in the module passes a
    keyword the wrapper does not name (`layer(x, scale=2.0)`), reported there. A `jax.custom_gradient` function binds no keyword at all: there every keyword
    argument is flagged, for a positional parameter too.

    ## Why is this bad?
    custom_vjp and custom_jvp bind every call to the primal's positional parameters before
    anything else, on every call (eager included). A keyword that cannot become a position is
    refused:

        TypeError: The input arguments to the custom_vjp-decorated function f could not be
        resolved to positional-only arguments. Binding failed with the error:
        The following keyword arguments could not be resolved to positions: scale

    A required keyword-only parameter fails either way: passed, with the error above; omitted,
    with `missing a required argument: 'scale'`. A keyword for a positional parameter is bound
    to its position by custom_vjp and custom_jvp, but not by `jax.custom_gradient`, whose inner
    custom_vjp wraps the function as `wrapped_fun(*args, **kwargs)`: `g(x, y, scale=2.0)` and
    `functools.partial(g, scale=2.0)(x, y)` raise the error above even when `scale` is an
    ordinary defaulted parameter (`docs/facts/scripts/jax_keyword_arguments.py`).

    ## Example
    ```python
    @jax.custom_vjp
    def scaled(x, *, scale=1.0):
        return x * scale

    y = scaled(x, scale=2.0)
    ```

    ## Use instead
    Make it positional (add it to `nondiff_argnums` if it is a static setting, and give fwd
    and bwd the matching parameters):
    ```python
    @jax.custom_vjp
    def scaled(x, scale=1.0):
        return x * scale

    y = scaled(x, 2.0)  # `scaled(x, scale=2.0)` works too now
    ```

    ## Fix safety
    No automatic fix: making the parameter positional changes fwd's and bwd's signatures too.
    """

    CODE = "VJP310"
    NAME = "primal-keyword-only"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp", b"custom_gradient")

    INVALID = ['''
import jax

@jax.custom_vjp
def scaled(x, *, scale=1.0):
    return x * scale

scaled.defvjp(lambda x, scale=1.0: (x * scale, scale), lambda s, g: (g * s,))

def loss(x):
    return scaled(x, scale=2.0).sum()
''', '''
import jax

@jax.custom_jvp
def clip(x, *, hi):
    return x

clip.defjvp(lambda p, t: (clip(*p), t[0]))
''']
    VALID = ['''
import jax

@jax.custom_vjp
def scaled(x, *, scale=1.0):
    return x * scale

scaled.defvjp(lambda x: (x, None), lambda _, g: (g,))

def loss(x):
    return scaled(x).sum()
''', '''
import jax

@jax.custom_vjp
def scaled(x, scale):
    return x * scale

scaled.defvjp(lambda x, s: (x * s, s), lambda s, g: (g * s, None))
y = scaled(1.0, scale=2.0)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.api == "custom_gradient":
            self._custom_gradient(d)
            return
        sig = self.model.facts.primal_signature(d)
        if sig is None or not (sig.kwonly or sig.kwarg) or d.api != "jax":
            return  # equinox passes keywords through; nnx, linen, custom_gradient bind their own way
        what = f"custom_{d.kind} `{d.name}`"
        required = [name for name in sig.kwonly if name not in sig.defaults]
        by_name = {a.arg for a in d.primal.args.args} if d.primal is not None else set()
        for name in required:
            self.report(sig.param_nodes[name],
                        f"keyword-only parameter `{name}` of {what} has no default, so no call can succeed: "
                        f"JAX binds custom_{d.kind} arguments to positions, and passing `{name}=` raises "
                        f"TypeError \"{RESOLVE_ERROR}: {name}\" while omitting it raises \"missing a required "
                        f"argument: '{name}'\". Make `{name}` a positional parameter (before the `*`)")
        for call, keyword in self._keyword_uses(d):
            name = keyword.arg
            assert name is not None
            if name in required or self.model.facts.expects_failure(call):
                continue  # reported once, at the definition; or a test that wants the error
            if name in sig.kwonly:
                kind = f"keyword-only parameter `{name}`"
            elif sig.kwarg and name not in by_name:
                kind = f"`{name}`, which lands in `**{sig.kwarg}`,"
            else:
                continue
            shown = f"{self.quote(call.func, 40)}(..., {name}=...)"
            head = f"`{shown}` passes {kind} of {what} by keyword"
            if self.model.facts.derivative_named(call.func) is not d and not isinstance(call.func, ast.Attribute):
                lands = "keyword-only" if name in sig.kwonly else f"in `**{sig.kwarg}`"
                head = (f"`{shown}` passes `{name}` by keyword, and `{self.quote(call.func, 40)}` forwards its "
                        f"keywords with `**` to {what}, where `{name}` is {lands}")
            self.report(keyword, f"{head}: JAX raises "
                                 f"TypeError \"{RESOLVE_ERROR}: {name}\" at every such call, eager included. "
                                 f"{self._advice(sig, name)}")

    def _custom_gradient(self, d: CustomDerivative) -> None:
        """custom_gradient binds arguments to positions only: every keyword fails, whatever the parameter."""
        for call, keyword in self._keyword_uses(d):
            if self.model.facts.expects_failure(call):
                continue
            name = keyword.arg
            shown = f"{self.quote(call.func, 40)}(..., {name}=...)"
            self.report(keyword, f"`{shown}` passes `{name}` by keyword to the jax.custom_gradient function "
                                 f"`{d.name}`: custom_gradient wraps it in a custom_vjp that takes `*args` only, so "
                                 f"JAX raises TypeError \"{RESOLVE_ERROR}: {name}\" at every such call, eager "
                                 f"included, even though `{name}` is one of its parameters. Pass it positionally (the "
                                 f"vjp function then returns a cotangent, or None, for it too)")

    def _advice(self, sig: Signature, name: str) -> str:
        if name in sig.kwonly:
            return f"Make `{name}` a positional parameter (add it to nondiff_argnums if it is static)"
        return (f"Replace `**{sig.kwarg}` with explicit positional parameters (add them to nondiff_argnums "
                f"if they are static)")

    def _keyword_uses(self, d: CustomDerivative) -> Iterator[Tuple[ast.Call, ast.keyword]]:
        """Keywords passed to `d` by direct calls and by `functools.partial(d, ...)`."""
        calls: List[ast.Call] = [site.call for site in d.call_sites]
        calls.extend(self.model.facts.partials_of(d))
        seen = set()
        for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
            if call in seen:
                continue
            seen.add(call)
            for keyword in call.keywords:
                if keyword.arg is not None:
                    yield call, keyword
                else:  # `f(x, **opts)` in `def layer(x, **opts)`: the keywords the module's calls of `layer` pass
                    yield from self._forwarded(call, keyword.value)

    def _forwarded(self, call: ast.Call, value: ast.expr) -> Iterator[Tuple[ast.Call, ast.keyword]]:
        index = self.model.index
        fn = index.enclosing_function(call)
        if not isinstance(value, ast.Name) or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        sig = self.model.signature(fn)
        scope = index.scopes.get(fn)
        if sig.kwarg != value.id or scope is None or len(scope.bindings.get(value.id, [])) != 1:
            return
        named = {*sig.positional, *sig.kwonly}
        for outer in self.model.facts.calls_of_name(fn.name):
            if any(b.node is fn for b in index.lookup(fn.name, index.scope_of(outer))):
                for keyword in outer.keywords:
                    if keyword.arg is not None and keyword.arg not in named:
                        yield outer, keyword
