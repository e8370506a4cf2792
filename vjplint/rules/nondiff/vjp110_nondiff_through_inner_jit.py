from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.param_evidence import Verdict
from vjplint.facts.transforms import FILTERS, MAPS, TRACES, VECTORIZES, Transform
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import FunctionNode
from vjplint.rules.base import Rule
from vjplint.rules.nondiff._callables_passed import passed_callables
from vjplint.rules.nondiff._opaque_objects import plain_class, registered_by_call
from vjplint.rules.nondiff._python_uses import PythonUses

# JAX transformations taking a function first
TAKES_FUNCTION = frozenset({"jax.vjp", "jax.jvp", "jax.linearize", "jax.grad", "jax.value_and_grad", "jax.vmap",
                            "jax.jit", "jax.jacfwd", "jax.jacrev", "jax.hessian", "jax.checkpoint", "jax.remat"})


class NondiffThroughInnerJit(Rule):
    """## What it does
    Flags a transformation that TRACES its function's arguments (the facts' table of transformation
    kinds, `facts/transforms.py`) applied *beneath* the creator or on the rules, when an argument JAX
    passes is a Python value the function needs as one. Beneath the creator: `@jax.jit`,
    `@jax.checkpoint`/`@jax.remat`, `@nnx.jit`/`@nnx.remat` (they make every argument an abstract
    array), `@jax.vmap`/`@jax.pmap` (they map every argument along an axis) and `@jnp.vectorize`
    (it makes every argument an array) below `@partial(jax.custom_jvp, nondiff_argnums=...)`, or in
    call form (`jax.custom_vjp(jax.jit(f), nondiff_argnums=...)`, a lambda included), without
    `static_argnums`/`static_argnames` (`excluded` for `jnp.vectorize`, `in_axes=None` for `vmap`)
    for the position, when a nondiff argument is called or annotated `Callable` (a function), or it
    is the whole test of an `if`, `while` or conditional expression (a flag), in the primal or in a
    function of the module it passes the argument to (three calls deep); or the nondiff inference
    shows the primal using it as a Python value (an `einsum` equation or another static argument of
    a JAX function, a dtype given to `.astype()`, a Python condition, a slice bound, a shape); or
    fwd, bwd or the jvp rule calls it or gives it to a JAX transformation (`jax.vjp(activation,
    v)`). On the rules: fwd, bwd or the jvp rule itself decorated with such a transformation (or
    registered as `f.defvjp(jax.jit(f_fwd), ...)`) while it needs a nondiff argument as a Python
    value. Beneath `jnp.vectorize` without `signature`, also any argument the primal uses as an
    array with axes (indexed, its `shape` read, an `axis=`, a matrix function): the primal then
    runs on 0-d elements. equinox's `filter_jit`/`filter_vmap` keep non-array arguments static:
    silent. A callable the calls pass as a `jax.tree_util.Partial` is a pytree, traced as data:
    silent unless a call passes a plain function there too.

    ## Why is this bad?
    JAX runs the jitted primal with every argument, nondiff ones included, and `jax.jit` traces
    them all: a function raises `TypeError: Error interpreting argument to <function f> as an
    abstract array ... not marked as static` (or `... is not a valid JAX type`), and a flag becomes a tracer, so the `if` raises
    `TracerBoolConversionError`. Measured on JAX 0.10.2
    (`docs/facts/scripts/errors/e65_nondiff_through_inner_jit.py`; array nondiff arguments work).
    `jax.checkpoint` traces its arguments the same way whenever the primal runs (a call, `jit`,
    `vmap`; under `grad` fwd runs instead): a function raises `TypeError: Cannot interpret value
    of type <class 'function'> as an abstract array` (census row E65, heldout7's
    `checkpoint_under_creator`). `jax.vmap`/`jax.pmap` raise for a function and for a Python
    scalar (`rank ... at least 1`); `jnp.vectorize` for a function (`... with dtype object is not a
    valid JAX array type`) and, without `signature`, for a use of axes on its 0-d elements
    (`IndexError: Too many indices: array is 0-dimensional`, `axis -1 is out of bounds`, shapes that
    do not broadcast). A jitted rule receives the nondiff arguments JAX passes it the same way.
    Routes measured in docs/facts/jax-errors.md, "Transformations around the creator: routes (kinds11)".

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
        uses = PythonUses(self.model)
        found = self._inner_transform(d)
        if found is not None and found[0].kind != FILTERS:
            if self._beneath(d, found[0], found[1], uses) or not d.nondiff:
                return
        if d.nondiff:
            self._on_rules(d, uses)

    def _beneath(self, d: CustomDerivative, t: Transform, primal: FunctionNode, uses: PythonUses) -> bool:
        params = [a.arg for a in (*primal.args.posonlyargs, *primal.args.args)]
        verdicts = {v.position: v for v in self.model.facts.verdicts(d)}
        for position in d.nondiff:
            if position >= len(params) or t.passes(position, params[position]):
                continue
            name = params[position]
            use = uses.annotated_callable(primal, name) or uses.python_use(primal, name) \
                or self._static_use(primal, verdicts.get(position)) or self._called_in_rules(d, position, uses) \
                or self._module_object(t, primal, name)
            if use is None:
                continue
            node, what, error = use
            if "function" in what and passed_callables(self.model, d, position, name) == (True, False):
                continue  # a `jax.tree_util.Partial` reaches it: a pytree, traced as data
            if t.kind in (MAPS, VECTORIZES):
                if t.kind == VECTORIZES and "function" not in what and "object" not in what:
                    continue
                self._report_map(d, t.node, primal, name, position, node, what, t)
                return True
            remat = t.name not in ("jax.jit", "jax.experimental.pjit.pjit", "flax.nnx.jit")
            verb, suggested = ("rematerialises", "jax.checkpoint") if remat else ("jits", "jax.jit")
            suggested = t.name[len("flax."):] if t.name.startswith("flax.") else suggested
            self.report(t.node, (
                f"`{self.quote(t.node, 40)}` {verb} the primal `{getattr(primal, 'name', '<lambda>')}` of {d.label} "
                f"`{d.name}` beneath the creator, so JAX traces every argument, nondiff ones included: "
                f"`{name}` (nondiff position {position}) is {what} (`{self.quote(node, 40)}`, line "
                f"{node.lineno}), so calling `{d.name}` raises {error}. Mark it static "
                f"(`partial({suggested}, static_argnums=({position},))`) or "
                f"{'checkpoint' if remat else 'jit'} the function that calls `{d.name}`"))
            return True
        return t.kind == VECTORIZES and not t.signature and self._vectorized_axes(d, t, primal, params)

    def _vectorized_axes(self, d: CustomDerivative, t: Transform, primal: FunctionNode, params: list) -> bool:
        """`jnp.vectorize` without `signature` runs the primal on 0-d elements: an argument it uses as having axes
        (heldout10's `vectorize_under_creator`: `x[i]`, `x.shape[0]`, `eigh`, an `axis=`) raises there."""
        for position, name in enumerate(params):
            axes = None if t.passes(position, name) else self.model.facts.axes_in_function(primal, name)
            if axes is not None:
                self.report(t.node, (
                    f"`{self.quote(t.node, 40)}` without `signature` beneath the creator runs the primal "
                    f"`{getattr(primal, 'name', '<lambda>')}` of {d.label} `{d.name}` on 0-d elements of its broadcast "
                    f"arguments, but {axes.why}: calling `{d.name}` raises (an index or axis error on a 0-d array, or "
                    f"shapes that do not broadcast). Give the core dimensions (`partial(jnp.vectorize, signature="
                    f"'(n)->()')`) or apply `jnp.vectorize` to `{d.name}` after the registration, under another name"))
                return True
        return False

    def _on_rules(self, d: CustomDerivative, uses: PythonUses) -> None:
        """fwd, bwd or the jvp rule under a tracing transformation (`@jax.jit` on the def, `f.defvjp(jax.jit(f_fwd),
        ...)`): JAX passes it the nondiff arguments, which the transformation traces (heldout10's `jit_on_rules`)."""
        for role in ("fwd", "bwd", "jvp"):
            rule = d.rule(role)
            found = self._rule_transform(rule) if rule is not None else None
            if found is None or found[0].kind == FILTERS:
                continue
            t, fn = found
            params = self.model.signature(fn).positional
            for position in d.nondiff:
                at = (position if role == "fwd" else d.nondiff.index(position)) - rule.bound_positional
                if not 0 <= at < len(params) or t.passes(at, params[at]):
                    continue
                use = uses.annotated_callable(fn, params[at]) or uses.python_use(fn, params[at]) or \
                    self._static_use(fn, self._verdict(d, position)) or self._primal_object(d, t, position)
                if use is None or ("function" in use[1] and passed_callables(
                        self.model, d, position, params[at]) == (True, False)):
                    continue
                node, what, error = use
                self.report(t.node, (
                    f"`{self.quote(t.node, 40)}` on `{getattr(fn, 'name', '<lambda>')}`, the {role} rule of {d.label} "
                    f"`{d.name}`, traces every argument JAX passes it, nondiff ones included: `{params[at]}` (nondiff "
                    f"position {position}) is {what} (`{self.quote(node, 40)}`, line {node.lineno}), so differentiating "
                    f"`{d.name}` raises {error}. Mark it static (`static_argnums=({at},)`) or drop the transformation "
                    f"from the rule (JAX traces the rules under the caller's `jit` anyway)"))
                return

    def _primal_object(self, d: CustomDerivative, t: Transform, position: int) -> Optional[Tuple[ast.AST, str, str]]:
        params = self.model.signature(d.primal).positional if d.primal is not None else []
        return self._module_object(t, d.primal, params[position]) if position < len(params) else None  # type: ignore[arg-type]

    def _verdict(self, d: CustomDerivative, position: int) -> Optional[Verdict]:
        return next((v for v in self.model.facts.verdicts(d) if v.position == position), None)

    def _rule_transform(self, rule: RuleFunction) -> Optional[Tuple[Transform, FunctionNode]]:
        if isinstance(rule.expr, ast.Call):
            return self.model.facts.transformed_function(rule.expr)
        fn = rule.node
        if rule.registered is not None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        for dec in fn.decorator_list:
            t = self.model.facts.transform_of(dec)
            if t is not None:
                return t, fn
        return None

    def _report_map(self, d: CustomDerivative, dec: ast.expr, primal: FunctionNode, name: str, position: int,
                    node: ast.AST, what: str, t: Transform) -> None:
        error = ("TypeError: a function is no JAX argument (`... is not a valid JAX type`)" if "function" in what else
                 "TypeError: an object is no JAX array (`... with dtype object is not a valid JAX array type`)"
                 if "object" in what else
                 "ValueError (`vmap was requested to map its argument along axis 0, which implies that its rank should "
                 "be at least 1`) for a Python scalar")
        fix = (f"Exclude it (`partial(jnp.vectorize, excluded={{{position}}})`)" if t.kind == VECTORIZES else
               f"Apply `{self.quote(dec, 30)}` to the function that calls `{d.name}`")
        self.report(dec, (
            f"`{self.quote(dec, 40)}` maps every argument of the primal `{getattr(primal, 'name', '<lambda>')}` of "
            f"{d.label} `{d.name}` beneath the creator, nondiff ones included: `{name}` (nondiff position {position}) "
            f"is {what} (`{self.quote(node, 40)}`, line {node.lineno}), so calling `{d.name}` raises {error}. {fix}"))

    def _module_object(self, t: Transform, primal: FunctionNode, name: str) -> Optional[Tuple[ast.AST, str, str]]:
        """The parameter annotated with a class of the module: `jnp.vectorize` makes every argument an array, so any
        object raises (heldout10's `vectorize_under_creator/pyroffi_fd_differentiable`); `jit`, `checkpoint` and the
        maps trace a pytree's leaves, so an object of a class that is no pytree (no decorator, plain bases) raises
        (`checkpoint_under_creator`, `jit_on_rules`: `Cannot interpret value of type <class 'GRiDDynamics'>`)."""
        arg = next((a for a in (*primal.args.posonlyargs, *primal.args.args) if a.arg == name), None)
        note = arg.annotation if arg is not None else None
        found = self.model.index.lookup(note.id, self.model.index.scope_of(primal)) if isinstance(note, ast.Name) else []
        if len(found) == 1 and isinstance(found[0].node, ast.ClassDef) and (
                t.kind == VECTORIZES or plain_class(self.model, found[0].node, 0) and not registered_by_call(self.model, note.id)):
            return arg, f"an object of class `{note.id}` (its annotation)" + (
                "" if t.kind == VECTORIZES else ", which is no pytree"), "TypeError"
        return None

    def _called_in_rules(self, d: CustomDerivative, position: int, uses: PythonUses) -> Optional[Tuple[ast.AST, str, str]]:
        """The value called, or given as the function of a JAX transformation (`jax.vjp(act, v)`), in
        fwd, bwd or the jvp rule: a function, which the traced primal receives as an argument too."""
        for role in ("fwd", "bwd", "jvp"):
            rule = d.rule(role)
            if rule is None or rule.node is None or rule.registered is not None:
                continue
            params = self.model.signature(rule.node).positional
            at = (position if role == "fwd" else d.nondiff.index(position)) - rule.bound_positional
            if not 0 <= at < len(params) or uses.rebound(rule.node, params[at]):
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

    def _inner_transform(self, d: CustomDerivative) -> Optional[Tuple[Transform, FunctionNode]]:
        """(the transformation applied beneath the creator, the function it is applied to)."""
        primal = d.primal
        decorators = getattr(primal, "decorator_list", [])
        if d.anchor in decorators:
            for dec in decorators[decorators.index(d.anchor) + 1:]:
                t = self.model.facts.transform_of(dec)
                if t is not None:
                    return t, primal  # type: ignore[return-value]
            return None
        creation = d.creation
        inner = creation.args[0] if isinstance(creation, ast.Call) and creation.args else None
        return self.model.facts.transformed_function(inner) if inner is not None else None
