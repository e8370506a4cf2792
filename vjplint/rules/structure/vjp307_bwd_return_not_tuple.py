from __future__ import annotations

import ast
from typing import Optional, Set, Tuple

from vjplint.diagnostics import Applicability, DroppedCotangent, Severity
from vjplint.plans.closure_plan import kept_none_mark
from vjplint.plans.safety import rewrite_draws
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import BWD_TREE, rule_label
from vjplint.rules.structure._cotangent_leaves import bound_value


class BwdReturnNotTuple(Rule):
    """## What it does
    Flags a `return` of a custom_vjp bwd rule that is provably not a tuple or list: `None`, a
    bare `return`, a constant, a dict, or one array (a `jnp`/`lax`/`jax.nn` call, arithmetic
    with one, `x.astype(...)`, or the cotangent itself when the primal provably returns one
    array), or a dict or class instance (a NamedTuple, a dataclass) that reaches the `return`
    through a variable or a helper of the module, or an instance of a NamedTuple class the module
    makes by a call (`Grads = collections.namedtuple('Grads', ['x', 'w'])`, `typing.NamedTuple('G',
    [...])`) returned directly or through a name. A helper whose result is not known, or a
    residual, stays silent, as does `tuple(Grads(...))`.

    For a custom_vjp with one differentiable argument whose output's structure the module does
    not show, it warns (severity warning) when bwd returns the cotangent parameter itself,
    arithmetic on it (`5 * g`), or a function a caller passes in applied to it
    (`handler_fn(g)`, a parameter of an enclosing function): right only when the output is
    itself a 1-tuple. A callee whose name says it returns the tuple already (`vjp_fn`,
    `pullback`, `*_bwd`) stays silent, and so does a primal whose output is a tuple or list
    (VJP306 compares lengths there). A custom_vjp whose primal returns only integer or boolean
    arrays (`jnp.argsort(x)`, a `pure_callback` declared `int32`) stays silent: the output's
    cotangent is float0, a symbolic zero, and no gradient runs its bwd.

    ## Why is this bad?
    bwd must return a tuple (or list) with one cotangent per differentiable argument, even
    when there is only one: `(ct,)`, not `ct`. Anything else fails under grad only:

        TypeError: Custom VJP bwd rule must produce an output with the same container
        (pytree) structure as the args tuple of the primal function ... but got bwd output
        structure PyTreeDef(*) for primal input structure PyTreeDef((*,)).

    `return None` does not mean "no gradients" either: write `None` per argument, in a tuple.
    A NamedTuple of cotangents for a NamedTuple argument is no exception: JAX compares pytree
    structures, and the args tuple of `f(state)` is `(state,)`, so bwd returns `(State(...),)`.

    ## Example
    ```python
    def f_bwd(cos_x, g):
        return g * jnp.asarray(cos_x)
    ```

    ## Use instead
    ```python
    def f_bwd(cos_x, g):
        return (g * jnp.asarray(cos_x),)
    ```

    ## Fix safety
    When the primal has exactly one differentiable argument, the value is wrapped as
    `(value,)` (a dict keyed by that argument's name, `{'x': g}`, becomes `(g,)`): safe for an expression (the code could not run before and the value is kept),
    unsafe for `None` (it becomes a deliberate zero gradient; where the primal's output depends on
    that argument, the `None` gets `# noqa: VJP602`, as VJP602 asks for a gradient left out on
    purpose). No fix with more arguments.
    """

    CODE = "VJP307"
    NAME = "bwd-return-not-tuple"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    FIX = "wrap as `(value,)`"

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(x, g):
    return g * jnp.cos(x)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(x, g):
    return [g * jnp.cos(x)]

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        if self.model.facts.integers().primal_output(d) is not None:
            return  # an integer output's cotangent is float0 (a symbolic zero): no gradient runs bwd
        for _, _, bwd in self.model.facts.checked_vjp_rules(d):
            if bwd is None or bwd.node is None:
                continue
            arrays = self._known_arrays(d, bwd)
            for node, value in self.model.facts.returns_of(bwd.node):
                for part in self.model.facts.return_branches(value) if value is not None else [None]:
                    where = node if part is None or part is value else part
                    if where not in self._seen:
                        self._seen.add(where)
                        self._check_return(d, bwd, where, part, arrays)

    def _reassigned_array(self, bwd: RuleFunction, name: str, arrays: Set[str]) -> Optional[str]:
        """`grad = g * cos(x); grad = grad * y`: every assignment is an array, given that the earlier ones
        are, and one is an array outright."""
        scope = self.model.index.scopes.get(bwd.node) if bwd.node is not None else None
        bindings = scope.bindings.get(name, []) if scope is not None else []
        if len(bindings) < 2 or name in scope.globals_ or name in scope.nonlocals:  # type: ignore[union-attr]
            return None  # one assignment is not_a_sequence's already
        assumed = {*arrays, name}
        outright = False
        for b in bindings:
            stmt = b.node
            if b.kind != "assign" or not isinstance(stmt, (ast.Assign, ast.AugAssign)) or \
                    isinstance(stmt, ast.Assign) and (len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name)):
                return None
            if isinstance(stmt, ast.AugAssign):
                continue  # `out += v` on an array leaves an array (or raises)
            value = stmt.value
            if self.model.facts.not_a_sequence(value, bwd.node, assumed) != "an array":  # type: ignore[arg-type]
                return None
            if isinstance(stmt, ast.Assign):
                outright = outright or self.model.facts.not_a_sequence(value, bwd.node, arrays) == "an array"  # type: ignore
        return f"an array: every assignment of `{name}` in the rule is one" if outright else None

    def _inferred_container(self, value: ast.expr) -> Optional[str]:
        """A dict or a class instance (NamedTuple, dataclass, struct) that reaches the return
        through a variable or a helper: neither is the args tuple (JAX compares the pytree
        structure, and a NamedTuple's node is not a tuple's)."""
        kind = self.model.facts.values().of(value)
        if kind.tag == "dict":
            return f"a dict: {kind.why}" if kind.why else "a dict"
        cls = kind.node
        if kind.tag == "record" and isinstance(cls, ast.ClassDef) and not any(
                (self.model.index.qualname(b) or "").rsplit(".", 1)[-1] in ("tuple", "list", "Tuple", "List")
                for b in cls.bases):
            built = f": {kind.why}" if kind.why else ""
            return f"a `{cls.name}` instance, a pytree node of its own{built}"
        return None

    def _functional_namedtuple(self, value: ast.expr) -> Optional[Tuple[str, ast.Call]]:
        """The name of a NamedTuple class the module makes by a call (`collections.namedtuple('G',
        ...)`, `typing.NamedTuple('G', [...])`) that `value` (or the name bound once to it) instantiates."""
        built = bound_value(self.model, value)
        if not isinstance(built, ast.Call) or not isinstance(built.func, ast.Name):
            return None
        bindings = self.model.index.lookup(built.func.id, self.model.index.scope_of(built.func))
        maker = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
        if isinstance(maker, ast.Call) and (self.model.index.qualname(maker.func) or "") in (
                "collections.namedtuple", "typing.NamedTuple", "typing_extensions.NamedTuple"):
            return built.func.id, maker
        return None

    def _known_arrays(self, d: CustomDerivative, bwd: RuleFunction) -> Set[str]:
        """The cotangent parameter's name, when the primal provably returns one array."""
        nondiff = self.model.facts.nondiff_positions(d)
        arity = self.model.facts.bwd_arity(d, bwd)
        if self.model.facts.nnx_pytree_g(d):
            return set()  # nnx's default mode: g is `(input_updates_g, out_g)`, not the output's cotangent
        if nondiff is None or arity is None or arity.vararg or len(arity.names) < len(nondiff) + 2:
            return set()
        return {arity.names[len(nondiff) + 1]} if self.model.facts.primal_returns_array(d) else set()

    def _check_bare_cotangent(self, d: CustomDerivative, bwd: RuleFunction, node: ast.AST, value: ast.expr) -> None:
        """A bwd for one differentiable input returning its cotangent bare (`return g`, `return 5 * g`,
        `return handler_fn(g)` of a callable a caller passes in) where the output's structure is
        not shown: right only when the primal's output is itself a 1-tuple, so a warning."""
        assert bwd.node is not None
        names = self.model.facts.differentiable_names(d)
        nondiff = self.model.facts.nondiff_positions(d)
        arity = self.model.facts.bwd_arity(d, bwd)
        if names is None or len(names) != 1 or nondiff is None or arity is None or arity.vararg or \
                len(arity.names) != len(nondiff) + 2 or self.model.facts.nnx_pytree_g(d) or d.api != "jax":
            return
        out = self.model.facts.primal_output(d)
        if out is not None and out.kind in ("tuple", "list"):
            return  # the cotangent is a tuple or list: VJP306 compares lengths
        why = self.model.facts.bare_cotangent(bwd.node, value, arity.names[-1])
        if why is None:
            return
        text = self.model.source_text(value)
        self.report(node, f"{rule_label(bwd, 'bwd')} returns `{self.quote(value)}` ({why}) bare, not a tuple: JAX "
                          f"needs a tuple with one cotangent for `{names[0]}`, so differentiating `{d.name}` may raise "
                          f"{BWD_TREE} (it does unless `{d.name}`'s output is itself a "
                          f"1-tuple); return `({text if len(text) <= 40 else '...'},)`",
                    severity=Severity.WARNING)

    def _check_return(self, d: CustomDerivative, bwd: RuleFunction, node: ast.AST, value: Optional[ast.expr],
                      arrays: Set[str]) -> None:
        assert bwd.node is not None
        why = self._reassigned_array(bwd, value.id, arrays) if isinstance(value, ast.Name) else None
        if why is None:  # the reassignments first: their reason names them
            why = self.model.facts.not_a_sequence(value, bwd.node, arrays)
        if why is None and isinstance(value, (ast.Name, ast.Call)):
            why = self._inferred_container(value)
        made = self._functional_namedtuple(value) if why is None and value is not None else None
        if made is not None:
            self.report(node, (
                f"{rule_label(bwd, 'bwd')} returns `{self.quote(value)}`, an instance of `{made[0]}`, a NamedTuple class "
                f"made by `{self.quote(made[1], 40)}`: it passes `isinstance(..., tuple)`, but its pytree node "
                f"is not a tuple's, and differentiating `{d.name}` raises {BWD_TREE}; return a plain tuple of the "
                "cotangents (`tuple(...)` of it, or the tuple literal)"))
            return
        if why is None:
            if value is not None:
                self._check_bare_cotangent(d, bwd, node, value)
            return
        names = self.model.facts.differentiable_names(d)
        if value is None:
            what = "None (a bare `return`)"
        elif why == "None":
            what = "`None`"
        elif isinstance(value, ast.Name) and value.id in arrays:
            what = f"the bare cotangent `{value.id}` (one array, since `{d.name}` returns one array)"
        else:
            what = f"`{self.quote(value)}` ({why})"
        if names is not None:
            per = f"one cotangent (or None) per differentiable argument of `{d.name}` ({', '.join(names)})"
        else:
            per = "one cotangent (or None) per differentiable argument"
        needs = "JAX needs" if d.api == "jax" else f"{d.label} `{d.name}` needs"
        error = self.model.facts.bwd_structure_error(d, BWD_TREE, "types")
        message = (f"{rule_label(bwd, 'bwd')} returns {what}, not a tuple: {needs} a tuple or list with {per}, "
                   f"and differentiating `{d.name}` raises {error}")
        if names is not None and len(names) == 1 and value is not None:
            text = self.model.source_text(value)
            if isinstance(value, (ast.NamedExpr, ast.Lambda)):
                text = f"({text})"
            if isinstance(value, ast.Dict) and len(value.keys) == 1 and isinstance(value.keys[0], ast.Constant) \
                    and value.keys[0].value == names[0]:
                # `{'x': g}` keyed by the parameter's own name means "g for x": the tuple holds `g`
                # (wrapping the dict would hand JAX a dict cotangent for an array argument: VJP348)
                text = self.model.source_text(value.values[0])
            wrapped = f"({text},)"
            shown = wrapped if len(wrapped) <= 60 else "(value,)"
            applicability = Applicability.UNSAFE if why == "None" else Applicability.SAFE
            fix = self.replacing(value, wrapped, applicability, f"Wrap as `{shown}`")
            if why == "None" and len(self.model.facts.returns_of(bwd.node)) == 1 and \
                    rewrite_draws(self.model, fix.edits, "VJP602", lambda e: isinstance(e, DroppedCotangent) and
                                  e.function == d.name and e.params == (names[0],) and e.why == "output",
                                  self.options.relint):
                # `return None` said "no gradient": the `None` kept in the tuple is marked as VJP602,
                # run on the rewrite, asks
                mark = kept_none_mark(self.model, value.lineno)
                fix = self.editing(applicability, fix.message, [*fix.edits, *mark])
            self.report(value, f"{message}; return `{shown}`", fix=fix)
        elif names is not None and why == "None":
            self.report(node, f"{message}; for zero gradients return `({', '.join(['None'] * len(names))})`")
        else:
            self.report(node, f"{message}; return a tuple of cotangents")
