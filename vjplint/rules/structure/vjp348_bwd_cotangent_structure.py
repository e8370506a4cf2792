from __future__ import annotations

import ast
from typing import Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import named_function
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._cotangent_leaves import (bound_value, container_call, elements, primal_reads,
                                                      returned_values)

JAX_ERROR = ("`TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) structure "
             "as the args tuple of the primal function`")
_SEQUENCES = frozenset({"builtins.tuple", "builtins.list"})


class BwdCotangentStructure(Rule):
    """## What it does
    Flags a custom_vjp bwd rule whose cotangents do not have the arguments' structure, in two
    ways the source shows. First, a tuple, a list, a dict or an instance of a class of the module
    (a NamedTuple, a dataclass) returned as the cotangent of an argument the primal uses as one
    array (arithmetic, an array method, a `jnp` function): `((g,),)` or `([g],)` for `f(x)`
    returning `jnp.sin(x)`, read through a returned name and a helper bwd delegates to. Second,
    a returned tuple or list that is filtered, so that it holds fewer
    entries than the primal has differentiable arguments: `tuple(c for c in (g, None) if c is not
    None)`, a list comprehension with such an `if`, `tuple(filter(None, cts))`,
    `list(filter(lambda c: c is not None, cts))`, or a list built with `append` under such an
    `if` in a loop, returned directly, through a name or from a helper bwd delegates to. When
    the filtered sequence is a literal (or a name bound once to one) whose `None` entries the
    filter drops, the count is known and the finding is an error; otherwise a warning: the
    count then depends on which cotangents are `None`. A filter on anything but the entries'
    being `None` (or falsy) stays silent. Third, a tuple or list returned for an argument whose
    fields the primal reads (`p.w`: a NamedTuple, a dataclass, another pytree node), and a dict
    without a key the primal reads (`params["b"]`).

    ## Why is this bad?
    JAX compares the pytree structure of bwd's output with the args tuple's (measured on JAX
    0.10.2, fixtures/rules/VJP348): a container where the argument is an array, a list or a
    NamedTuple for a tuple argument, all raise the TypeError below under `grad`.

    bwd returns one entry per differentiable argument, `None` included: `None` is how bwd says
    "zero cotangent" for that argument, and JAX matches the entries to the arguments by position.
    Dropping the `None`s shortens the tuple, and `grad` raises

        TypeError: Custom VJP bwd rule must produce an output with the same container (pytree)
        structure as the args tuple of the primal function, and in particular must produce a
        tuple of length equal to the number of arguments to the primal function, but got bwd
        output structure PyTreeDef((*,)) for primal input structure PyTreeDef((*, *)).

    Worse, when the lengths happen to agree (a `None` dropped and another argument's cotangent
    shifted in its place), the cotangents reach the wrong arguments.

    ## Example
    ```python
    def scale_bwd(res, g):
        x, w = res
        return tuple(c for c in (g * w, None) if c is not None)
    ```

    ## Use instead
    ```python
    def scale_bwd(res, g):
        x, w = res
        return (g * w, None)
    ```

    ## Fix safety
    No fix: the unfiltered sequence is the fix where it is a literal, but which entries belong
    to which argument is the author's to check.
    """

    CODE = "VJP348"
    NAME = "bwd-cotangent-structure"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax

@jax.custom_vjp
def scale(x, w):
    return x * w

def scale_fwd(x, w):
    return x * w, (x, w)

def scale_bwd(res, g):
    x, w = res
    return tuple(c for c in (g * w, None) if c is not None)

scale.defvjp(scale_fwd, scale_bwd)
''']
    VALID = ['''
import jax

@jax.custom_vjp
def scale(x, w):
    return x * w

def scale_fwd(x, w):
    return x * w, (x, w)

def scale_bwd(res, g):
    x, w = res
    return tuple(c * 2 for c in (g * w, None) if c is not None) + (None,)

scale.defvjp(scale_fwd, scale_bwd)
''']

    def check(self) -> None:
        facts = self.model.facts
        for d, _, bwd, _ in facts.registered_bwds(lambda d: bool(facts.differentiable_names(d))):
            assert bwd.node is not None
            names = facts.differentiable_names(d) or ()
            for value, where in returned_values(self.model, bwd.node):
                self._containers(d, bwd, value, names)
                found = self._filtered(value)
                if found is None:
                    continue
                source, how = found
                literal = bound_value(self.model, source) if source is not None else None
                if isinstance(literal, (ast.Tuple, ast.List)) and len(literal.elts) == len(names) and not any(
                        isinstance(e, ast.Starred) for e in literal.elts):
                    nones = sum(isinstance(e, ast.Constant) and e.value is None for e in literal.elts)
                    if nones:
                        self.report(where, self._known(d, bwd, value, how, literal, names, nones))
                    continue
                self.report(where, self._may(d, bwd, value, how, names), severity=Severity.WARNING)

    # -- a container for an array -------------------------------------------------------------
    def _containers(self, d: CustomDerivative, bwd: RuleFunction, value: ast.expr, names: Tuple[str, ...]) -> None:
        """A tuple, list, dict or class instance returned as the cotangent of an argument the primal
        uses as one array (`((g,),)` for `f(x)` with `jnp.sin(x)`)."""
        found = elements(self.model, value)
        if found is None or len(found) != len(names) or d.primal is None:
            return
        for element, name in zip(found, names):
            built = bound_value(self.model, element)
            if isinstance(built, (ast.Tuple, ast.List)):
                kind = f"a {len(built.elts)}-element {'tuple' if isinstance(built, ast.Tuple) else 'list'}"
            elif isinstance(built, ast.Dict) or isinstance(built, ast.Call) and container_call(self.model, built):
                kind = "a dict" if isinstance(built, ast.Dict) else f"a `{self.quote(built.func, 30)}`"
            else:
                continue
            if self._other_node(d, bwd, element, built, kind, name):
                continue
            use = self.model.facts.used_as_array(d.primal, name)
            if use is None:
                continue
            self.report(element, (
                f"{rule_label(bwd, 'bwd')} returns `{self.quote(element, 40)}`, {kind}, as the cotangent of `{name}`, "
                f"but `{d.name}` uses `{name}` as one array (`{self.quote(use, 40)}`): a cotangent has its "
                f"argument's pytree structure, and differentiating `{d.name}` raises {JAX_ERROR}; return the array "
                f"itself in `{name}`'s place (one entry per argument: `(ct_{name}, ...)`, not `((ct_{name},), ...)`)"))

    def _other_node(self, d: CustomDerivative, bwd: RuleFunction, element: ast.expr, built: ast.expr, kind: str,
                    name: str) -> bool:
        """A tuple or list for an argument whose fields the primal reads (`p.w`: a record, another pytree node), or a
        dict without a key the primal reads (`params["b"]`): the cotangent's structure is not the argument's."""
        keys, attrs = primal_reads(self.model, d.primal, name)  # type: ignore[arg-type]
        given = ({k.value for k in built.keys if isinstance(k, ast.Constant)} if isinstance(built, ast.Dict) and
                 all(isinstance(k, ast.Constant) for k in built.keys) else {k.arg for k in built.keywords}
                 if isinstance(built, ast.Call) and kind == "a `dict`" and not built.args and
                 all(k.arg for k in built.keywords) else None)
        missing = [k for k in keys if given is not None and k not in given]
        if isinstance(built, (ast.Tuple, ast.List)) and attrs:
            read = next(iter(attrs.values()))
            why = (f"but `{d.name}` reads `{self.quote(read, 30)}`, a field no tuple or list has: `{name}` is a record "
                   f"(a NamedTuple, a dataclass, a pytree class), another pytree node, and its cotangent must be one "
                   f"too; build it as `{name}` is built (`type({name})(...)`, `{name}._replace(...)`)")
        elif missing:
            why = (f"but `{d.name}` reads `{self.quote(keys[missing[0]], 30)}`: `{name}` has the key"
                   f"{'s' if len(missing) > 1 else ''} {', '.join(repr(k) for k in missing)}, which the cotangent "
                   f"lacks; give every key of `{name}` its cotangent (zeros where it has none)")
        else:
            return False
        self.report(element, f"{rule_label(bwd, 'bwd')} returns `{self.quote(element, 40)}`, {kind}, as the cotangent "
                             f"of `{name}`, {why}: differentiating `{d.name}` raises {JAX_ERROR}")
        return True

    # -- what is filtered -------------------------------------------------------------------
    def _filtered(self, value: ast.expr) -> Optional[Tuple[Optional[ast.expr], str]]:
        """(the sequence filtered, how) when `value` drops the `None` (or falsy) entries of a sequence."""
        inner = value
        if isinstance(value, ast.Call) and (self.model.index.qualname(value.func) or "") in _SEQUENCES \
                and len(value.args) == 1 and not value.keywords:
            inner = value.args[0] if isinstance(value.args[0], ast.Name) and self._appended(value.args[0]) \
                else bound_value(self.model, value.args[0])
        if isinstance(inner, (ast.GeneratorExp, ast.ListComp)) and len(inner.generators) == 1:
            gen = inner.generators[0]
            if isinstance(gen.target, ast.Name) and any(self._drops_none(c, gen.target.id) for c in gen.ifs):
                return gen.iter, "a comprehension keeping only the entries that are not `None`"
            return None
        if isinstance(inner, ast.Call) and (self.model.index.qualname(inner.func) or "") == "builtins.filter" \
                and len(inner.args) == 2 and self._none_predicate(inner.args[0]):
            return inner.args[1], "`filter`, which drops the `None` entries"
        if isinstance(inner, ast.Name):
            return self._appended(inner)
        return None

    def _drops_none(self, test: ast.expr, var: str) -> bool:
        """`var is not None`, `var`, `not (var is None)`, or a conjunction holding one."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._drops_none(v, var) for v in test.values)
        if isinstance(test, ast.Name):
            return test.id == var
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Compare):
            c = test.operand
            return self._is_none_test(c, var, ast.Is)
        return isinstance(test, ast.Compare) and self._is_none_test(test, var, ast.IsNot)

    @staticmethod
    def _is_none_test(c: ast.Compare, var: str, op: type) -> bool:
        sides = [c.left, *c.comparators]
        return len(c.ops) == 1 and isinstance(c.ops[0], op) and any(
            isinstance(s, ast.Name) and s.id == var for s in sides) and any(
            isinstance(s, ast.Constant) and s.value is None for s in sides)

    def _none_predicate(self, fn: ast.expr) -> bool:
        if isinstance(fn, ast.Constant) and fn.value is None:
            return True
        lam = named_function(self.model.index, fn)
        if isinstance(lam, ast.Lambda) and len(lam.args.args) == 1:
            return self._drops_none(lam.body, lam.args.args[0].arg)
        return False

    def _appended(self, name: ast.Name) -> Optional[Tuple[Optional[ast.expr], str]]:
        """A list started empty and appended to under a `None` test in a loop over a sequence."""
        bindings = self.model.index.lookup(name.id, self.model.index.scope_of(name))
        if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].value, ast.List) \
                or bindings[0].value.elts:
            return None
        fn = self.model.index.enclosing_function(name)
        if fn is None:
            return None
        for loop in self.model.facts.own_nodes(fn):
            if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name):
                continue
            for stmt in loop.body:
                if isinstance(stmt, ast.If) and self._drops_none(stmt.test, loop.target.id) and not stmt.orelse \
                        and any(self._appends(s, name.id) for s in stmt.body):
                    return loop.iter, "a loop appending only the entries that are not `None`"
        return None

    @staticmethod
    def _appends(stmt: ast.stmt, name: str) -> bool:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
            and isinstance(call.func.value, ast.Name) and call.func.value.id == name

    # -- messages -----------------------------------------------------------------------------
    def _known(self, d: CustomDerivative, bwd: RuleFunction, value: ast.expr, how: str, literal: ast.expr,
               names: Tuple[str, ...], nones: int) -> str:
        kept = len(names) - nones
        return (f"{rule_label(bwd, 'bwd')} returns `{self.quote(value, 50)}`, built from `{self.quote(literal, 40)}` "
                f"by {how}: {kept} cotangent{'' if kept == 1 else 's'} for the {len(names)} "
                f"differentiable arguments of `{d.name}` ({_listed(names)}); bwd returns one entry per argument, "
                f"`None` included, and differentiating `{d.name}` raises {JAX_ERROR}; return "
                f"`{self.quote(literal, 40)}` itself")

    def _may(self, d: CustomDerivative, bwd: RuleFunction, value: ast.expr, how: str,
             names: Tuple[str, ...]) -> str:
        return (f"{rule_label(bwd, 'bwd')} returns `{self.quote(value, 50)}`, built by {how}: whenever a "
                f"cotangent is `None` it holds fewer than the {len(names)} entries `{d.name}` needs "
                f"({_listed(names)}), and differentiating `{d.name}` may raise {JAX_ERROR} or hand a cotangent to "
                f"the wrong argument; return one entry per argument, `None` included")


def _listed(names: Tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


