from __future__ import annotations

import ast

from vjplint.diagnostics import Severity
from vjplint.model.semantic import named_function
from vjplint.rules.base import Rule


class GradOfIntegerInput(Rule):
    """## What it does
    Flags a call of `jax.grad(f)`, `jax.value_and_grad(f)`, `jax.jacrev(f)`, `jax.jacfwd(f)` or
    `jax.hessian(f)` (without `allow_int=True`), in a
    module defining a custom derivative, that passes an integer or boolean value at a
    differentiated position (`argnums`, 0 by default): an integer literal, `jnp.arange(5)`,
    `jnp.array([1, 2, 3])`, `jnp.arange(n)` with `n` an integer every caller passes, an int dtype (`dtype=jnp.int32`, `.astype(jnp.int32)`), a comparison,
    `argmax`..., `jax.random.randint`, `np.int32(3)`, directly or through a name, a `*args` tuple
    (also a list the caller copies and overwrites, `a = list(args); a[0] = v`, or fills with
    `append`), a parameter that every call of its function in the module gives one, or as a leaf of
    a pytree the call passes (a tuple, list or dict display, `dict(...)`, a NamedTuple of the
    module); the gradient function called where it is made, through `jax.jit` or `jax.vmap`, or
    through a name bound to it, whatever it differentiates (a function, a method, a `partial`).

    ## Why is this bad?
    Reverse mode differentiates inexact (float or complex) inputs only. Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e42_grad_int_input.py`, census row E42 of
    `docs/facts/jax-errors.md`): `TypeError: grad requires real- or complex-valued inputs (input
    dtype that is a sub-dtype of np.inexact), but got int32.` at the call, before any rule of the
    custom derivative runs; `jax.jacrev` says the same, `jax.jacfwd` and `jax.hessian` `jacfwd
    requires real-valued inputs`.

    ## Example
    ```python
    def model(x):
        return jnp.sum(f(x))

    slope = jax.grad(model)(jnp.arange(5))
    ```

    ## Use instead
    ```python
    slope = jax.grad(model)(jnp.arange(5.0))  # or .astype(jnp.float32)
    ```
    or keep the integer out of `argnums` (`allow_int=True` gives it a `float0` gradient).

    ## Fix safety
    No automatic fix: whether the input is meant to be a float or not differentiated at all is
    the author's choice.
    """

    CODE = "VJP367"
    NAME = "grad-of-integer-input"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

def model(x):
    return jnp.sum(f(x))

slope = jax.grad(model)(jnp.arange(5))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

def model(x):
    return jnp.sum(f(x))

slope = jax.grad(model)(jnp.arange(5.0))
''']

    def check(self) -> None:
        if not any(d.api == "jax" for d in self.model.derivatives):
            return
        for app in self.model.facts.grad_applications():
            if app.argnums is None or app.keyword("allow_int") is not None:
                continue
            d = self.model.facts.derivative_named(app.target)
            fn = d.primal if d is not None else named_function(self.model.index, app.target)
            known = isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            params = self.model.signature(fn).positional if known else []  # a method, a partial: by position
            for position in app.argnums:
                if not 0 <= position < len(app.args) or not app.args[position]:
                    continue
                shown = [self.model.facts.integer_input(v) for v in app.args[position]]
                if all(s is not None for s in shown):
                    name = f"`{params[position]}`" if position < len(params) else f"input {position}"
                    self._report(app, name, shown[0])
                    break

    def _report(self, app, name: str, shown: ast.expr) -> None:
        short = app.transform.rsplit(".", 1)[-1]
        checker = {"value_and_grad": "grad", "hessian": "jacfwd"}.get(short, short)
        kind = "real-valued" if checker == "jacfwd" else "real- or complex-valued"
        self.report(app.applied, (
            f"`{self.quote(app.grad, 40)}` differentiates {name}, which this call gives an integer or bool "
            f"value: `{self.quote(shown, 40)}` (line {shown.lineno}); JAX raises `TypeError: {checker} requires "
            f"{kind} inputs` at the call; pass a float (`3.0`, `jnp.arange(5.0)`, "
            "`.astype(jnp.float32)`) or leave it out of `argnums`"))
