from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative
from vjplint.model.jaxapi import PARTIAL
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.rules.base import Rule
from vjplint.rules.nondiff._callables_passed import passed_callables

JIT = "jax.jit"
# Transformations that trace every argument of the function they wrap, as jit does (no static_argnums)
CALLABLE = frozenset({"typing.Callable", "collections.abc.Callable"})
INNER = frozenset({JIT, "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "jax.ad_checkpoint.remat"})
# Transformations beneath the creator that map every argument (measured on JAX 0.10.2, /tmp/after10a/e65.py): a
# function raises `... is not a valid JAX type`; `jax.vmap`/`jax.pmap` map a Python flag too (ValueError, rank 0),
# `jnp.vectorize` turns it into a concrete array (it runs), so there only a function counts. `np.vectorize` runs.
MAPS = frozenset({"jax.vmap", "jax.pmap"})
VECTORIZE = "jax.numpy.vectorize"


# JAX transformations taking a function first
TAKES_FUNCTION = frozenset({"jax.vjp", "jax.jvp", "jax.linearize", "jax.grad", "jax.value_and_grad", "jax.vmap",
                            "jax.jit", "jax.jacfwd", "jax.jacrev", "jax.hessian", "jax.checkpoint", "jax.remat"})


class NondiffThroughInnerJit(Rule):
    """## What it does
    Flags a custom_vjp or custom_jvp whose primal is jitted *beneath* the creator (`@jax.jit`
    below `@partial(jax.custom_jvp, nondiff_argnums=...)`, or `jax.custom_vjp(jax.jit(f),
    nondiff_argnums=...)`), or rematerialised beneath it (`@jax.checkpoint`, `jax.remat`), without
    `static_argnums`, when a nondiff argument is a Python value the primal needs as one: it is
    called or annotated `Callable` (a function), or it is the whole test of an `if`,
    `while` or conditional expression (a flag), in the primal or in a function of the module it
    passes the argument to (three calls deep); or the nondiff inference shows the primal using it
    as a Python value (an `einsum` equation or another static argument of a JAX function, a dtype
    given to `.astype()`, a Python condition, a slice bound); or fwd, bwd or the jvp rule calls it
    or gives it to a JAX transformation (`jax.vjp(activation, v)`): a function, which the jitted or
    rematerialised primal receives as an argument too, even when its body never reads it. A
    callable the calls pass as a `jax.tree_util.Partial` (directly, from a factory of the module or
    through a wrapper's parameter) is a pytree, traced as data: silent unless a call passes a plain
    function there too.

    ## Why is this bad?
    JAX runs the jitted primal with every argument, nondiff ones included, and `jax.jit` traces
    them all: a function raises `TypeError: Error interpreting argument to <function f> as an
    abstract array ... not marked as static` (or `... is not a valid JAX type`), and a flag becomes a tracer, so the `if` raises
    `TracerBoolConversionError`. Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e65_nondiff_through_inner_jit.py`; array nondiff arguments work).
    `jax.checkpoint` traces its arguments the same way whenever the primal runs (a call, `jit`,
    `vmap`; under `grad` fwd runs instead): a function raises `TypeError: Cannot interpret value
    of type <class 'function'> as an abstract array` (census row E65, heldout7's
    `checkpoint_under_creator`).

    ## Example
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    @jax.jit
    def integrate(f, a, b):
        return (b - a) * (f(a) + f(b)) / 2
    ```

    ## Use instead
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    @partial(jax.jit, static_argnums=(0,))
    def integrate(f, a, b):
        return (b - a) * (f(a) + f(b)) / 2
    ```
    or jit the function that calls `integrate`.

    ## Fix safety
    No automatic fix: whether to mark the argument static or move the jit is for the author.
    """

    CODE = "VJP110"
    NAME = "nondiff-through-inner-jit"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    APIS = frozenset({"jax"})

    INVALID = ['''
from functools import partial
import jax

@partial(jax.custom_jvp, nondiff_argnums=(0,))
@jax.jit
def integrate(f, a, b):
    return (b - a) * (f(a) + f(b)) / 2
''']
    VALID = ['''
from functools import partial
import jax

@partial(jax.custom_jvp, nondiff_argnums=(0,))
@partial(jax.jit, static_argnums=(0,))
def integrate(f, a, b):
    return (b - a) * (f(a) + f(b)) / 2
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        if not d.nondiff:
            return
        found = self._inner_jit(d)
        if found is None:
            return
        jit, primal = found
        params = [a.arg for a in (*primal.args.posonlyargs, *primal.args.args)]
        verdicts = {v.position: v for v in self.model.facts.verdicts(d)}
        for position in d.nondiff:
            if position >= len(params):
                continue
            use = self._annotated_callable(primal, params[position]) or self._python_use(primal, params[position]) \
                or self._static_use(primal, verdicts.get(position)) or self._called_in_rules(d, position) \
                or self._module_object(jit, primal, params[position])
            if use is None:
                continue
            node, what, error = use
            if "function" in what and passed_callables(self.model, d, position, params[position]) == (True, False):
                continue  # a `jax.tree_util.Partial` reaches it: a pytree, traced as data
            target = jit.func if isinstance(jit, ast.Call) else jit
            q = self.model.index.qualname(jit.args[0] if self._partial_vectorize(jit) else target)
            if q in MAPS or q == VECTORIZE:
                if q == VECTORIZE and "function" not in what and "object" not in what:
                    continue
                self._report_map(d, jit, primal, params[position], position, node, what, q)
                return
            remat = self.model.index.qualname(target) != JIT
            verb, name = ("rematerialises", "jax.checkpoint") if remat else ("jits", "jax.jit")
            self.report(jit, (
                f"`{self.quote(jit, 40)}` {verb} the primal `{getattr(primal, 'name', '<lambda>')}` of {d.label} "
                f"`{d.name}` beneath the creator, so JAX traces every argument, nondiff ones included: "
                f"`{params[position]}` (nondiff position {position}) is {what} (`{self.quote(node, 40)}`, line "
                f"{node.lineno}), so calling `{d.name}` raises {error}. Mark it static "
                f"(`partial({name}, static_argnums=({position},))`) or "
                f"{'checkpoint' if remat else 'jit'} the function that calls `{d.name}`"))
            return

    def _report_map(self, d: CustomDerivative, dec: ast.expr, primal: FunctionNode, name: str, position: int,
                    node: ast.AST, what: str, q: str) -> None:
        error = ("TypeError: a function is no JAX argument (`... is not a valid JAX type`)" if "function" in what else
                 "TypeError: an object is no JAX array (`... with dtype object is not a valid JAX array type`)"
                 if "object" in what else
                 "ValueError (`vmap was requested to map its argument along axis 0, which implies that its rank should "
                 "be at least 1`) for a Python scalar")
        fix = (f"Exclude it (`partial(jnp.vectorize, excluded={{{position}}})`)" if q == VECTORIZE else
               f"Apply `{self.quote(dec, 30)}` to the function that calls `{d.name}`")
        self.report(dec, (
            f"`{self.quote(dec, 40)}` maps every argument of the primal `{getattr(primal, 'name', '<lambda>')}` of "
            f"{d.label} `{d.name}` beneath the creator, nondiff ones included: `{name}` (nondiff position {position}) "
            f"is {what} (`{self.quote(node, 40)}`, line {node.lineno}), so calling `{d.name}` raises {error}. {fix}"))

    def _module_object(self, dec: ast.expr, primal: FunctionNode, name: str) -> Optional[Tuple[ast.AST, str, str]]:
        """Beneath `jnp.vectorize` (which makes every argument an array): the parameter annotated with a class of the
        module, an object that is no array (heldout10's `vectorize_under_creator/pyroffi_fd_differentiable`)."""
        if not (self.model.index.qualname(dec) == VECTORIZE or self._partial_vectorize(dec)):
            return None
        arg = next((a for a in (*primal.args.posonlyargs, *primal.args.args) if a.arg == name), None)
        note = arg.annotation if arg is not None else None
        found = self.model.index.lookup(note.id, self.model.index.scope_of(primal)) if isinstance(note, ast.Name) else []
        if len(found) == 1 and isinstance(found[0].node, ast.ClassDef):
            return arg, f"an object of class `{note.id}` (its annotation)", "TypeError"
        return None

    def _annotated_callable(self, primal: FunctionNode, name: str) -> Optional[Tuple[ast.AST, str, str]]:
        """The parameter's annotation when it says a function (`Callable`, `Callable[..., T]`):
        traced as an argument whether or not the body calls it."""
        arg = next((a for a in (*primal.args.posonlyargs, *primal.args.args) if a.arg == name), None)
        note = arg.annotation if arg is not None else None
        note = note.value if isinstance(note, ast.Subscript) else note
        if note is None or (self.model.index.qualname(note) or "") not in CALLABLE:
            return None
        return arg, "annotated as a function", ("TypeError: a function is no JAX argument (`Cannot interpret value "
                                                "of type <class 'function'> as an abstract array`)")

    def _called_in_rules(self, d: CustomDerivative, position: int) -> Optional[Tuple[ast.AST, str, str]]:
        """The value called, or given as the function of a JAX transformation (`jax.vjp(act, v)`), in
        fwd, bwd or the jvp rule: a function, which the traced primal receives as an argument too."""
        for role in ("fwd", "bwd", "jvp"):
            rule = d.rule(role)
            if rule is None or rule.node is None or rule.registered is not None:
                continue
            params = self.model.signature(rule.node).positional
            at = (position if role == "fwd" else d.nondiff.index(position)) - rule.bound_positional
            if not 0 <= at < len(params) or self._rebound(rule.node, params[at]):
                continue
            name = params[at]
            for node in ast.walk(rule.node):
                if not isinstance(node, ast.Call):
                    continue
                given = (self.model.index.qualname(node.func) or "") in TAKES_FUNCTION and node.args and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id == name
                if given or isinstance(node.func, ast.Name) and node.func.id == name:
                    return node, f"a function, which {role} {'passes to a JAX transformation' if given else 'calls'}", (
                        "TypeError: a function is no JAX argument (`... is not a valid JAX type`)")
        return None

    def _static_use(self, primal: FunctionNode, v: Optional[Verdict]) -> Optional[Tuple[ast.AST, str, str]]:
        """A use of the value as a Python value in the jitted primal's body (or a function of the
        module it passes the value to), from the nondiff verdict's evidence: a static argument of
        a JAX function, a Python condition, a slice bound, a dtype given to `.astype()`."""
        if v is None:
            return None
        first, last = primal.lineno, getattr(primal, "end_lineno", primal.lineno)
        for e in v.evidence:
            if e.kind == "static" and e.from_usage and e.weight >= 2 and first <= e.line <= last:
                node = next((n for n in ast.walk(primal) if getattr(n, "lineno", 0) == e.line
                             and isinstance(n, ast.stmt)), primal)
                node = node.test if isinstance(node, (ast.If, ast.While)) else node
                return node, f"used as a Python value: it {e.reason}", (
                    "TypeError for a string or a dtype (`Error interpreting argument to ... as an abstract array`), "
                    "a tracer conversion error (ConcretizationTypeError, TracerBoolConversionError) or `Non-hashable "
                    "static arguments` for a number")
        return None

    def _inner_jit(self, d: CustomDerivative) -> Optional[Tuple[ast.expr, FunctionNode]]:
        """(the bare `jax.jit` applied beneath the creator, the jitted def)."""
        primal = d.primal
        decorators = getattr(primal, "decorator_list", [])
        if d.anchor in decorators:
            for dec in decorators[decorators.index(d.anchor) + 1:]:
                if self.model.index.qualname(dec) in INNER | MAPS | {VECTORIZE} or self._partial_vectorize(dec):
                    return dec, primal  # type: ignore[return-value]
            return None
        creation = d.creation
        inner = creation.args[0] if isinstance(creation, ast.Call) and creation.args else None
        if not (isinstance(inner, ast.Call) and len(inner.args) == 1 and not inner.keywords
                and self.model.index.qualname(inner.func) in INNER | MAPS | {VECTORIZE} and isinstance(inner.args[0], ast.Name)):
            return None
        for b in self.model.index.lookup(inner.args[0].id, self.model.index.scope_of(inner)):
            if b.kind == "def" and isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return inner, b.node
        return None

    def _partial_vectorize(self, dec: ast.expr) -> bool:
        """`partial(jnp.vectorize, signature=...)` without `excluded`."""
        return isinstance(dec, ast.Call) and len(dec.args) == 1 and self.model.index.qualname(dec.func) in PARTIAL \
            and self.model.index.qualname(dec.args[0]) == VECTORIZE and all(k.arg != "excluded" for k in dec.keywords)

    def _python_use(self, fn: FunctionNode, name: str, depth: int = 0) -> Optional[Tuple[ast.AST, str, str]]:
        """Where `fn` calls `name` or tests it as a flag, here or in a function of the module it
        passes `name` to (three calls deep: `_route_fwd(x, flag)` then `if flag:` in `_sort_impl`)."""
        if self._rebound(fn, name):
            return None
        found = self._own_python_use(fn, name)
        if found is not None or depth >= 3:
            return found
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            callee = named_function(self.model.index, node.func)
            if callee is None or isinstance(callee, ast.Lambda) or callee is fn:
                continue
            params = self.model.signature(callee).positional
            inner = next((params[i] for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == name
                          and i < len(params) and not any(isinstance(b, ast.Starred) for b in node.args[:i])), None)
            inner = inner or next((k.arg for k in node.keywords if isinstance(k.value, ast.Name)
                                   and k.value.id == name and k.arg in params), None)
            if inner is None:
                continue
            use = self._python_use(callee, inner, depth + 1)
            if use is not None:
                where, what, error = use
                return where, what if " in `" in what else f"{what} in `{callee.name}`", error
        return None

    def _own_python_use(self, fn: FunctionNode, name: str) -> Optional[Tuple[ast.AST, str, str]]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                return node, "called as a function", ("TypeError: a function is no jit argument (`Error interpreting "
                                                     "argument to ... as an abstract array ... not marked as static`, "
                                                     "or `... is not a valid JAX type`)")
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and isinstance(node.test, ast.Name) and \
                    node.test.id == name:
                return node.test, "tested as a Python flag", "TracerBoolConversionError"
        return None

    @staticmethod
    def _rebound(fn: FunctionNode, name: str) -> bool:
        targets: List[ast.AST] = [t for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.For))
                                  for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
        inner = [n for n in ast.walk(fn) if n is not fn and isinstance(n, (ast.FunctionDef, ast.Lambda))
                 and name in [a.arg for a in n.args.args]]
        return any(isinstance(t, ast.Name) and t.id == name for t in targets) or bool(inner)
