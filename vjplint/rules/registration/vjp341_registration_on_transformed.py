from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.model.jaxapi import JAX_JVP, JAX_VJP, PARTIAL, REGISTRATION_METHODS
from vjplint.rules.base import Rule
from vjplint.rules.registration._local_wrappers import LocalWrappers

# `functools` caches: the wrapper is a `functools._lru_cache_wrapper`, without `defvjp` (measured on
# JAX 0.10.2: fixtures/rules/VJP341/fire_lru_cache_above_creator.py).
CACHES = frozenset({"functools.lru_cache", "functools.cache"})
WRAPPERS = CACHES | {"jax.profiler.annotate_function", "jax.named_call"}
CREATORS = frozenset((*JAX_VJP, *JAX_JVP))
# The KIND, not a list: any function of these modules applied above the creator returns a new object without `defvjp`
# (jax.jit/vmap/grad/named_call/remat/checkify/shard_map, jnp/np.vectorize, functools caches, equinox filter_jit/
# filter_vmap, flax nnx.jit/nnx.remat: measured on JAX 0.10.2, docs/facts/jax-errors.md "Transformations around the
# creator: routes (kinds11)"), except these, which return their argument.
KNOWN = ("jax", "numpy", "functools", "equinox", "flax")
SAME = frozenset({"functools.wraps", "functools.update_wrapper"}) | CREATORS
FORWARDING = ("jax.custom_batching.", "jax.custom_transpose.")  # custom_vmap forwards `defjvp`/`defvjp` (JAX's tests)
QUIET = ("builtins", "typing", "typing_extensions", "abc", "vjplint")  # imported names that are not wrappers


class RegistrationOnTransformed(Rule):
    """## What it does
    Flags a custom_vjp or custom_jvp whose name is bound, before its rules are registered by that
    name (`f.defvjp(fwd, bwd)`, `@f.defjvp`), to whatever a call of another function returns: a
    decorator stacked above `@jax.custom_vjp`/`@jax.custom_jvp` or the call form
    `f = jax.jit(jax.custom_vjp(g))`. An error when the function is known to return a new object:
    any function of jax, numpy, functools, equinox or flax (`@jax.jit`, `@partial(jax.jit, ...)`,
    `@jax.checkpoint`, `@jax.vmap`, `@jnp.vectorize`, `@jax.named_call`, `@functools.lru_cache`,
    `@eqx.filter_jit`, `@nnx.jit`...), or a decorator (or decorator factory) of the module whose
    every return is a function it defines or a transformation of its argument; a "may" warning for
    an imported decorator of another module; silent for one of the module that returns its argument
    (a registry). Also the name rebound to a transformation or a `functools.partial` of it
    (`f = jax.jit(f)`) before the registration, and `@staticmethod`/`@classmethod` above the
    creator in a class body that registers the rules by the bare name (the descriptor).

    ## Why is this bad?
    The transformation returns a new object (`jax.jit` a `PjitFunction`, `jnp.vectorize` and
    `jax.vmap` a `function`, `eqx.filter_jit` a `_JitWrapper`), which has no `defvjp`/`defjvp`:
    the registration raises `AttributeError: ... object has no attribute 'defvjp'` at import
    (`functools.wraps` copies the custom function's `__dict__`, not its class's `defvjp`).
    Measured in `docs/facts/scripts/errors/e63_registration_on_transformed.py` and the routes of
    docs/facts/jax-errors.md, "Transformations around the creator: routes (kinds11)".

    ## Example
    ```python
    @jax.jit
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(f_fwd, f_bwd)
    ```

    ## Use instead
    ```python
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(f_fwd, f_bwd)
    f_jit = jax.jit(f)  # or jit the function that calls f
    ```

    ## Fix safety
    No automatic fix: which name callers should use, the custom function or its jitted version,
    is for the author.
    """

    CODE = "VJP341"
    NAME = "registration-on-transformed"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.jit
@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
''', '''
import jax
import jax.numpy as jnp

def _g(x):
    return jnp.sin(x)

f = jax.jit(jax.custom_jvp(_g))
f.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
f_jit = jax.jit(f)
''']

    def check(self) -> None:
        for d in self.model.derivatives:
            if d.api == "jax" and d.registrations:
                above = self._transform_above(d)
                if above is not None:
                    self._report(above, f"`@{self.quote(above, 30)}` is stacked above `@{self.quote(d.anchor, 40)}` "
                                        f"on `{d.name}`", d.name, d.kind, self._registration_line(d), self._made(above),
                                 self._wrapper_name(above))
                elif (dec := self._transform_above(d, self._unknown)) is not None:
                    self._report(dec, f"`@{self.quote(dec, 30)}` (imported) is stacked above `@{self.quote(d.anchor, 40)}` "
                                      f"on `{d.name}`", d.name, d.kind, self._registration_line(d), "", may=True)
        for d in self.model.derivatives:
            if d.api == "jax" and d.class_node is not None:
                self._descriptor_in_class_body(d)
        made = self._transformed_creations()
        if made:
            for node in self.model.index.of_type(ast.Attribute):
                if node.attr in REGISTRATION_METHODS and isinstance(node.value, ast.Name) and \
                        isinstance(node.ctx, ast.Load):
                    owner = self.model.index.parent(node)  # `@f.defjvp`: the decorator is read where the def is
                    found = made.get((node.value.id, self.model.index.scope_of(
                        owner if node in getattr(owner, "decorator_list", ()) else node)))
                    if found is not None and found[0].lineno < node.lineno and \
                            not self._rebound_between(node.value.id, found[0], node.lineno):
                        assign, call, kind = found
                        self._report(call, f"`{node.value.id} = {self.quote(call, 50)}` (line {assign.lineno}) binds "
                                           f"`{node.value.id}` to " + ("a `functools.partial` of the" if self.model.index.qualname(
                                           call.func) in PARTIAL else "the transformed") + f" custom_{kind}", node.value.id, kind,
                                     node.lineno, self._made(call.func), self._wrapper_name(call.func))
                        made = {k: v for k, v in made.items() if v is not found}

    def _descriptor_in_class_body(self, d: CustomDerivative) -> None:
        """`@staticmethod`/`@classmethod` above the creator in a class body whose own statements register the rules
        by the bare name: there the name is the descriptor, which has no `defvjp` (through the class, `Ops.f`, it is
        the custom function; measured on JAX 0.10.2, fixtures/rules/VJP341/fire_staticmethod_class_body.py)."""
        decorators = getattr(d.primal, "decorator_list", [])
        if d.anchor not in decorators:
            return
        above = [dec for dec in decorators[:decorators.index(d.anchor)]
                 if isinstance(dec, ast.Name) and dec.id in ("staticmethod", "classmethod")]
        body = self.model.index.scope_of(d.primal)
        for reg in d.registrations:
            node = reg.node.func if isinstance(reg.node, ast.Call) else reg.node
            if above and not reg.as_decorator and isinstance(node, ast.Attribute) and \
                    isinstance(node.value, ast.Name) and self.model.index.scope_of(reg.node) is body:
                self._report(above[0], f"`@{above[0].id}` is stacked above `@{self.quote(d.anchor, 40)}` on `{d.name}` "
                                       f"in the body of class `{d.class_node.name}`", d.name, d.kind, reg.node.lineno,
                             above[0].id, descriptor=True)
                return

    def _rebound_between(self, name: str, assign: ast.Assign, line: int) -> bool:
        """`name` assigned again, in the same scope, after `assign` and before `line`."""
        scope = self.model.index.scope_of(assign)
        return any(b.node is not assign and assign.lineno < getattr(b.node, "lineno", 0) < line
                   for b in scope.bindings.get(name, []))

    def _report(self, node: ast.AST, how: str, name: str, kind: str, line: int, made: str, wrapper: str = "",
                descriptor: bool = False, may: bool = False) -> None:
        method = "defvjp" if kind == "vjp" else "defjvp"
        if may:
            return self.report(node, f"{how}: if it returns a new function (a wrapper), that function has no `{method}` and "
                               f"registering the rules by that name (line {line}) raises AttributeError when the module is "
                               f"imported. Register the rules on the custom function, then apply the decorator to it under "
                               f"another name", severity=Severity.WARNING)
        advice = (f"Register the rules after the class body, through the class (`{self._class_of(node)}.{name}.{method}"
                  f"(...)`), or define `{name}` at module level and bind it in the class" if descriptor else
                  f"Register the rules on the custom function itself, then bind `{name}` to it" if made == "functools.partial"
                  else f"Apply `{wrapper}` to `{name}` after the registration, to another name" if made.startswith("functools")
                  else f"Apply `{wrapper}` beneath the creator (the wrapper is then the primal) or to `{name}` after the "
                  f"registration" if wrapper else
                  f"Apply `{self._applied(node)}` after the registration, to another name (`{name}_"
                  f"{self._applied(node).split('.')[-1]} = {self._applied(node)}({name})`), or to the function that calls `{name}`")
        what = "an object" if descriptor or made == "functools.partial" else "a new function"
        self.report(node, (
            f"{how}, {what} that has no `{method}`: registering its rules by that name (line {line}) "
            f"raises AttributeError: '{made}' object has no attribute '{method}' when the module is imported. {advice}"))

    def _applied(self, node: ast.AST) -> str:
        """The transformation as written (`jax.jit` for `partial(jax.jit, ...)` and `jax.jit(jax.custom_vjp(g))`)."""
        node = self._unwrap(node)  # type: ignore[arg-type]
        return self.quote(node.func if isinstance(node, ast.Call) else node, 30)

    def _class_of(self, node: ast.AST) -> str:
        return next((a.name for a in self.model.index.ancestors(node) if isinstance(a, ast.ClassDef)), "Cls")

    def _wrapper_name(self, expr: ast.expr) -> str:
        """The name of a wrapper that is not a JAX transformation (a profiling annotation, a cache, a local one)."""
        expr = self._unwrap(expr)
        if self.model.index.qualname(expr) in WRAPPERS:
            return self.quote(expr, 40)
        named = expr.func if isinstance(expr, ast.Call) else expr
        return named.id if isinstance(named, ast.Name) and self._plain_wrapper(expr) else ""

    def _transform_above(self, d: CustomDerivative, test=None) -> Optional[ast.expr]:
        decorators = getattr(d.primal, "decorator_list", [])
        if d.anchor not in decorators:
            return None
        for dec in decorators[:decorators.index(d.anchor)]:
            if (test or self._hiding)(dec):
                return dec
        return None

    def _made(self, expr: ast.expr) -> str:
        """The type of the object the wrapper returns, as JAX's AttributeError names it."""
        expr = self._unwrap(expr)
        q = self.model.index.qualname(expr)
        return ("jaxlib._jax.PjitFunction" if q == "jax.jit" else "functools.partial" if q in PARTIAL else
                "vectorize" if q == "numpy.vectorize" else
                "functools._lru_cache_wrapper" if q in CACHES else "function")

    def _unwrap(self, expr: ast.expr) -> ast.expr:
        """`partial(jax.jit, ...)` -> `jax.jit`; `functools.lru_cache(maxsize=...)` -> `functools.lru_cache`."""
        if isinstance(expr, ast.Call) and expr.args and self.model.index.qualname(expr.func) in PARTIAL:
            return expr.args[0]
        if isinstance(expr, ast.Call) and not expr.args and self._known(self.model.index.qualname(expr.func)):
            return expr.func  # `functools.lru_cache(maxsize=...)`, `jax.jit(static_argnums=...)`
        return expr

    def _hiding(self, expr: ast.expr) -> bool:
        """`jax.jit` (a transformation that returns a new function), `functools.partial(jax.jit, ...)`,
        or a decorator of the module that returns a new plain function."""
        expr = self._unwrap(expr)
        q = self.model.index.qualname(expr)
        return self._known(q) or self._plain_wrapper(expr)

    @staticmethod
    def _known(q: Optional[str]) -> bool:
        return q is not None and q.split(".")[0] in KNOWN and q not in SAME and not q.startswith(FORWARDING)

    def _unknown(self, expr: ast.expr) -> bool:
        """An imported decorator of another module (neither known nor a builtin): it may return a wrapper."""
        q = self.model.index.qualname(self._unwrap(expr.func if isinstance(expr, ast.Call) else expr))
        return q is not None and q.split(".")[0] not in KNOWN + QUIET and q not in PARTIAL

    def _plain_wrapper(self, expr: ast.expr) -> bool:
        """A decorator (or decorator factory) of the module that returns a new object, never its argument."""
        return LocalWrappers(self.model, self._known).returns_new(expr)

    def _registration_line(self, d: CustomDerivative) -> int:
        reg = d.registrations[0]
        for dec in getattr(reg.node, "decorator_list", []) if reg.as_decorator else []:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(target, ast.Attribute) and target.attr in REGISTRATION_METHODS:
                return dec.lineno
        return getattr(reg.node, "lineno", 0)

    def _transformed_creations(self) -> Dict[Tuple[str, object], Tuple[ast.Assign, ast.Call, str]]:
        """(name, scope) -> (the assignment, the transform call, kind) for `name = jax.jit(jax.custom_vjp(g))`."""
        made: Dict[Tuple[str, object], Tuple[ast.Assign, ast.Call, str]] = {}
        named = {(d.name, self.model.index.scope_of(
            d.primal if d.anchor in getattr(d.primal, "decorator_list", ()) else d.anchor)): d.kind
            for d in self.model.derivatives if d.api == "jax" and not d.is_alias}
        for assign in self.model.index.of_type(ast.Assign):
            call = assign.value
            if not (len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name) and isinstance(call, ast.Call)
                    and call.args and (self._hiding(call.func) or self.model.index.qualname(call.func) in PARTIAL)):
                continue
            first = call.args[0]
            # `f = jax.jit(f)` / `g = functools.partial(f, scale=2.0)` of a custom function of this scope
            kind = (named.get((first.id, self.model.index.scope_of(assign)), "") if isinstance(first, ast.Name)
                    else self._creator_kind(first) if isinstance(first, ast.Call) else "")
            if kind:
                made[(assign.targets[0].id, self.model.index.scope_of(assign))] = (assign, call, kind)
        return made

    def _creator_kind(self, call: ast.Call) -> str:
        func: ast.expr = call.func
        if isinstance(func, ast.Call) and func.args and self.model.index.qualname(func.func) in PARTIAL:
            func = func.args[0]  # `partial(jax.custom_vjp, nondiff_argnums=...)(g)`
        q = self.model.index.qualname(func)
        return "" if q not in CREATORS else "vjp" if q in JAX_VJP else "jvp"
