from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts import plural
from vjplint.model.file_model import CustomDerivative, Signature
from vjplint.model.semantic import FunctionNode
from vjplint.rules.base import Rule

# Decorators that keep the function's signature.
PASS_THROUGH = frozenset({"jax.jit", "jax.named_call", "functools.wraps", "jax.checkpoint", "jax.remat"})
RESOLVE = "could not be resolved to positional-only arguments. Binding failed with the error"


class CustomCallBinding(Rule):
    """## What it does
    Checks each call in this module of a `jax.custom_vjp`/`jax.custom_jvp` function against its
    primal's signature: more positional arguments than it has parameters, a keyword naming no
    parameter, or a required parameter left out. A `*args` whose length the source shows (a
    tuple literal, a jvp rule's own `primals` tuple: one entry per differentiable parameter) is
    counted; a call with an unknown `*args` or `**kwargs` is not checked. Keyword-only parameters
    and `**kwargs` entries are VJP310's.

    ## Why is this bad?
    custom_vjp and custom_jvp bind every call to the primal's signature before anything else,
    eager included, and refuse what does not bind:

        TypeError: The input arguments to the custom_jvp-decorated function f could not be
        resolved to positional-only arguments. Binding failed with the error:
        too many positional arguments

    (`got an unexpected keyword argument 'z'`, `missing a required argument: 'y'`). The common
    way in: the primal's signature changed (a parameter removed, moved into or out of
    `nondiff_argnums`) and a call, often the jvp rule's own `f(*primals, option)`, was not updated.

    ## Example
    ```python
    @jax.custom_jvp
    def f(x, y):
        return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        return f(*primals, 2.0), tx * y + x * ty
    ```

    ## Use instead
    ```python
        return f(*primals), tx * y + x * ty
    ```

    ## Fix safety
    No fix: which argument is extra or missing needs a human.
    """

    CODE = "VJP346"
    NAME = "custom-call-binding"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    APIS = frozenset({"jax"})

    INVALID = ['''
import jax

@jax.custom_jvp
def f(x, y):
    return x * y

@f.defjvp
def f_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return f(*primals, 2.0), tx * y + x * ty
''']
    VALID = ['''
import jax

@jax.custom_jvp
def f(x, y=1.0):
    return x * y

@f.defjvp
def f_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return f(*primals), tx * y + x * ty

z = f(1.0) + f(1.0, y=2.0)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        sig = d.signature
        if sig is None or sig.vararg or d.primal is None:
            return
        decorators = getattr(d.primal, "decorator_list", [])
        if any(dec is not d.anchor and self.model.index.qualname(dec) not in PASS_THROUGH for dec in decorators):
            return  # a decorator of its own may change what the primal takes
        for site in d.call_sites:
            call = site.call
            if site.positional_offset or isinstance(call.func, ast.Attribute) or \
                    self.model.facts.expects_failure(call):
                continue  # `self.f(x)`: a custom function read through an instance is VJP203's
            problem = self._problem(call, sig, site.enclosing)
            if problem is not None:
                node, error = problem
                self.report(node, f"`{self.quote(call, 50)}` cannot be bound to the parameters of custom_{d.kind} "
                                  f"`{d.name}` ({', '.join(sig.positional)}): JAX binds every call to them first, "
                                  f"eager included, and raises TypeError \"The input arguments to the custom_{d.kind}-"
                                  f"decorated function {d.name} {RESOLVE}: {error}\". Pass the arguments "
                                  f"`{d.name}` takes")

    def _problem(self, call: ast.Call, sig: Signature, enclosing: Optional[FunctionNode]
                 ) -> Optional[Tuple[ast.AST, str]]:
        count = 0
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                length = self._length(arg.value, enclosing)
                if length is None:
                    return None  # positions unknown from here on
                count += length
            else:
                count += 1
        if count > len(sig.positional):
            return call, (f"too many positional arguments ({plural(count, 'argument')} for "
                          f"{plural(len(sig.positional), 'parameter')})")
        if any(k.arg is None for k in call.keywords):
            return None  # `**options`: names unknown
        names = set(sig.positional) | set(sig.kwonly)
        for keyword in call.keywords:
            if keyword.arg not in names and sig.kwarg is None:
                return keyword, f"got an unexpected keyword argument '{keyword.arg}'"
        given = set(sig.positional[:count]) | {k.arg for k in call.keywords}
        missing = [p for p in sig.positional if p not in given and p not in sig.defaults]
        if missing:
            return call, f"missing a required argument: '{missing[0]}'"
        return None

    def _length(self, value: ast.expr, enclosing: Optional[FunctionNode]) -> Optional[int]:
        """How many entries `*value` unpacks, when the source shows it: a tuple/list literal (or a
        name bound once to one), or a jvp rule's `primals`/`tangents` parameter, never rebound."""
        if isinstance(value, (ast.Tuple, ast.List)):
            return None if any(isinstance(e, ast.Starred) for e in value.elts) else len(value.elts)
        if not isinstance(value, ast.Name):
            return None
        bindings = self.model.index.lookup(value.id, self.model.index.scope_of(value))
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if binding.kind == "assign" and isinstance(binding.value, (ast.Tuple, ast.List)):
            return self._length(binding.value, enclosing)
        if binding.kind != "param" or enclosing is None:
            return None
        for owner in self.model.derivatives:
            nondiff = self.model.facts.nondiff_positions(owner)
            if owner.kind != "jvp" or owner.signature is None or owner.signature.vararg or nondiff is None:
                continue
            for _, rule in self.model.facts.jvp_rules(owner):
                if rule.node is not enclosing or rule.signature is None:
                    continue
                params = rule.signature.positional[rule.bound_positional:]
                if len(params) == len(nondiff) + 2 and value.id in params[-2:]:
                    return len(owner.signature.positional) - len(nondiff)
        return None
