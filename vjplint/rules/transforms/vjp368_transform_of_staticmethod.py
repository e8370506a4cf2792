from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.model.jaxapi import PARTIAL
from vjplint.rules.base import Rule

# JAX transformations that wrap the function object they are given (and refuse a descriptor)
TRANSFORMS = frozenset({f"jax.{n}" for n in (
    "jit", "checkpoint", "remat", "vmap", "pmap", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
    "named_call", "ad_checkpoint.checkpoint")})
DESCRIPTORS = frozenset({"builtins.staticmethod"})  # a classmethod fails other ways (measured: jit says "Expected a callable")
RAISES = {
    "checkpoint": "`TypeError: cannot create weak reference to 'staticmethod' object` at the first call",
    "remat": "`TypeError: cannot create weak reference to 'staticmethod' object` at the first call",
}


class TransformOfStaticmethod(Rule):
    """## What it does
    Flags a JAX transformation (`@jax.jit`, `@jax.checkpoint`/`@jax.remat`, `@jax.vmap`,
    `@jax.grad`, `partial(jax.jit, ...)`...) stacked directly above `@staticmethod` in the
    decorators of a custom derivative's primal or of one of its rules:
    the transformation receives the descriptor object, not the function.

    ## Why is this bad?
    Measured on JAX 0.10.2 (`fixtures/rules/VJP368/`): `jax.jit`, `jax.vmap` and `jax.grad`
    raise `TypeError: staticmethod arguments are not supported` where the class is defined;
    `jax.checkpoint` accepts it and raises `TypeError: cannot create weak reference to
    'staticmethod' object` at the first call. `jax.custom_vjp`/`jax.custom_jvp` themselves take a
    staticmethod (Python 3.10+ makes it callable), so adding a transformation beneath the creator
    of a working `@jax.custom_jvp @staticmethod` stack (to rematerialise or compile it) breaks it.

    ## Example
    ```python
    class Profile:
        @jax.custom_jvp
        @jax.checkpoint
        @staticmethod
        def evaluate(x):
            return jnp.sin(x)
    ```

    ## Use instead
    Put the transformation beneath `@staticmethod`, on the function itself:
    ```python
    class Profile:
        @jax.custom_jvp
        @staticmethod
        @jax.checkpoint
        def evaluate(x):
            return jnp.sin(x)
    ```

    ## Fix safety
    No automatic fix: the order of a decorator stack is the author's to choose.
    """

    CODE = "VJP368"
    NAME = "transform-of-staticmethod"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp

class Profile:
    @jax.custom_jvp
    @jax.checkpoint
    @staticmethod
    def evaluate(x):
        return jnp.sin(x)

    @evaluate.defjvp
    def evaluate_jvp(primals, tangents):
        return jnp.sin(primals[0]), jnp.cos(primals[0]) * tangents[0]
''']
    VALID = ['''
import jax
import jax.numpy as jnp

class Profile:
    @jax.custom_jvp
    @staticmethod
    @jax.checkpoint
    def evaluate(x):
        return jnp.sin(x)

    @evaluate.defjvp
    def evaluate_jvp(primals, tangents):
        return jnp.sin(primals[0]), jnp.cos(primals[0]) * tangents[0]
''']
    APIS = frozenset({"jax"})

    def check_derivative(self, d: CustomDerivative) -> None:
        functions = [d.primal] + [r.node for reg in d.registrations for r in reg.rules]
        seen = set()
        for fn in functions:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn not in seen:
                seen.add(fn)
                self._check_stack(fn)

    def _check_stack(self, fn: ast.FunctionDef) -> None:
        decorators = fn.decorator_list
        for above, below in zip(decorators, decorators[1:]):
            name = self._transform(above)
            if name is None or (self.model.index.qualname(below) or "") not in DESCRIPTORS:
                continue
            kind = (self.model.index.qualname(below) or "").rsplit(".", 1)[-1]
            short = name.rsplit(".", 1)[-1]
            raised = RAISES.get(short, f"`TypeError: {kind} arguments are not supported` where the class is defined")
            self.report(above, (
                f"`@{self.quote(above, 40)}` is applied to the `{kind}` object of `{fn.name}`, not to the function: "
                f"JAX raises {raised}; put `@{kind}` above it (`@{kind}` then `@{self.quote(above, 30)}` on the def)"))
            return

    def _transform(self, dec: ast.expr) -> Optional[str]:
        q = self.model.index.qualname(dec.func if isinstance(dec, ast.Call) else dec) or ""
        if q in PARTIAL and isinstance(dec, ast.Call) and dec.args:
            q = self.model.index.qualname(dec.args[0]) or ""
        return q if q in TRANSFORMS else None
