from __future__ import annotations

import ast
from typing import Set

from vjplint.diagnostics import Severity
from vjplint.facts.contract import ARRAY, NONE, TUPLE, Struct
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._primal_like import primal_like
from vjplint.rules.structure._tangent_carry import carries, container, unpacked, whole
from vjplint.rules.structure._tangent_messages import none_leaf, none_tangent, whole_tangents


class JvpTangentStructure(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule whose tangent output has another container structure than the
    primal output: a `defjvp` rule returning `(primal_out, (tangent,))` for a function whose output
    is one array, a tuple tangent of another length, a list for a tuple; and a `defjvps` rule
    returning a tuple where the output is one array. Structures are read through names bound once,
    helpers, calls of the function itself and arithmetic on arrays (`vjplint/facts/contract.py`).
    Where the output's structure is unknown, a rule returning `x, (t,)` with `x` and `t` the
    primal and tangent JAX passed at the same position (`t` also through `jnp.where` or arithmetic
    with a constant) is flagged too: the tangent has `x`'s structure, and the 1-element container
    around it cannot. A rule returning `None` as its tangent (meant as "no derivative") is flagged
    whenever its primal output is not None: None is a tangent only for a None output. A Python
    number as the tangent (`0.0`) is one leaf, wrong for a tuple output; and `x, (dx,)` where both
    are made as the primal makes its output (its solver called twice) is flagged whatever that is.
    The whole `tangents` tuple (returned, `tree_map`ped, or a comprehension over it) is a tuple with
    one entry per differentiable argument, wrong beside a primal JAX passed (a warning where the
    output is not shown); a tuple for an output the function builds as a NamedTuple, dataclass or
    dict is another pytree node; an array for a `None` leaf of the output (or `None` for an array)
    differs too.

    ## Why is this bad?
    JAX requires the tangent to have exactly the primal output's pytree structure. Anything else
    fails whenever the function is differentiated (`jax.jvp`, `jax.grad`, `jacfwd`), never in an
    eager call:

        TypeError: Custom JVP rule f_jvp for function f must produce primal and tangent outputs
        with equal container (pytree) structures, but got PyTreeDef(*) and PyTreeDef((*,)).

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), (jnp.cos(x) * t,)
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), jnp.cos(x) * t
    ```

    ## Fix safety
    No automatic fix: which structure was meant is the author's call.
    """

    CODE = "VJP333"
    NAME = "jvp-tangent-structure"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), (jnp.cos(x) * t,)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x), jnp.cos(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return (jnp.sin(x), jnp.cos(x)), (jnp.cos(x) * t, -jnp.sin(x) * t)
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg in d.registrations:
            for rule in reg.rules:
                fn = rule.node
                if fn is None or rule.is_none or fn in self._done:
                    continue
                self._done.add(fn)
                if reg.method == "defjvp":
                    self._check_defjvp(d, rule)
                elif reg.method == "defjvps":
                    self._check_defjvps(d, rule, reg.rules.index(rule))

    def _check_defjvp(self, d: CustomDerivative, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)  # a rule that only returns `_impl(primals, tangents)`
        env = self.model.facts.rule_environment(d, fn, "defjvp", rule.bound_positional if fn is rule.node else 0)
        for _, value in self.model.facts.returns_of(fn):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2 or \
                    any(isinstance(e, ast.Starred) for e in value.elts):
                continue
            primal_expr, tangent_expr = value.elts
            tangent = self.model.facts.structure(d, tangent_expr, fn, env)
            if tangent is None and isinstance(tangent_expr, ast.Constant) and isinstance(
                    tangent_expr.value, (int, float, complex)) and not isinstance(tangent_expr.value, bool):
                tangent = Struct(ARRAY, 1, "a number")  # `0.0` as a zero tangent: one leaf
            if tangent is None:
                if not self._other_node(d, rule, primal_expr, tangent_expr):
                    self._check_inside(d, rule, fn, primal_expr, tangent_expr, env)
                continue
            if self._wraps_like_primal(d, rule, primal_expr, tangent_expr):
                continue
            primal = self.model.facts.structure(d, primal_expr, fn, env)
            where = f"its primal output `{self.quote(primal_expr, 40)}`"
            if primal is None or primal.kind == NONE:
                primal, where = self.model.facts.primal_output(d), "the function's output"
            if tangent.kind == NONE:  # `return out, None`, meant as "no derivative"
                if isinstance(tangent_expr, ast.Constant) and not (isinstance(primal_expr, ast.Constant)
                                                                   or primal is not None and primal.kind == NONE):
                    self.report(tangent_expr, none_tangent(self, d, rule, primal, where))
                continue
            if primal is None and self._wraps_own_tangent(d, fn, rule, primal_expr, tangent_expr):
                continue
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            if primal is None and tangent.kind == TUPLE and tangent.length == 1 and len(params) >= 2 and \
                    whole(tangent_expr, params[-1], self.model) and not isinstance(primal_expr, (ast.Tuple, ast.List)):
                self.report(tangent_expr, whole_tangents(self, d, rule, primal_expr, tangent_expr, params[-1]),
                            severity=Severity.WARNING)  # `return fn(x), tangents`: the output is not shown
                continue
            if primal is None or primal.kind == NONE or primal.same_as(tangent):
                if not self._other_node(d, rule, primal_expr, tangent_expr):
                    self._check_inside(d, rule, fn, primal_expr, tangent_expr, env)
                continue
            self._report(d, rule, tangent_expr, tangent, primal, where)

    def _other_node(self, d: CustomDerivative, rule: RuleFunction, primal_expr: ast.expr, tangent_expr: ast.expr) -> bool:
        """A tangent that is another kind of pytree node than the primal output (a tuple for a
        NamedTuple or a dict, a dict for a tuple): JAX compares the nodes, not only the leaves."""
        t, p = container(self.model, tangent_expr), container(self.model, primal_expr)
        if p is None and d.primal is not None and self.model.facts.returns_of(d.primal):
            made = {container(self.model, v) for _, v in self.model.facts.returns_of(d.primal)}
            p = made.pop() if len(made) == 1 else None
        if t is None or p is None or t[0] == p[0]:
            return False
        self.report(tangent_expr, f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the tangent "
                    f"`{self.quote(tangent_expr, 40)}`, {t[1]}, for the primal output `{self.quote(primal_expr, 40)}`, "
                    f"{p[1]}: JAX compares the pytree nodes too, not only the leaves, so differentiating `{d.name}` "
                    f"(jvp, grad, jacfwd) raises TypeError \"Custom JVP rule {getattr(rule.called, 'name', '<lambda>')} "
                    f"for function {d.name} must produce primal and tangent outputs with equal container (pytree) "
                    f"structures\". Build the tangent as the output is built ({p[1]})")
        return True

    def _check_inside(self, d: CustomDerivative, rule: RuleFunction, fn, primal_expr: ast.expr,
                      tangent_expr: ast.expr, env) -> None:
        """Outputs written as the same container (`(out,), ((t,),)`, dicts, NamedTuples): each
        primal value against the tangent value in its place, when both structures are shown; a
        literal `None` leaf of one against an array of the other."""
        for p, t in self.model.facts.container_pairs(primal_expr, tangent_expr):
            if self._wraps_like_primal(d, rule, p, t) or self._wraps_own_tangent(d, fn, rule, p, t):
                return
            inner_t, inner_p = self.model.facts.structure(d, t, fn, env), self.model.facts.structure(d, p, fn, env)
            if inner_t is not None and inner_p is not None and NONE not in (inner_t.kind, inner_p.kind) and \
                    not inner_p.same_as(inner_t):
                self._report(d, rule, t, inner_t, inner_p, f"the primal output in its place, `{self.quote(p, 30)}`,")
                return
            if inner_t is not None and inner_p is not None and {inner_t.kind, inner_p.kind} == {NONE, ARRAY} and \
                    isinstance(t if inner_t.kind == NONE else p, ast.Constant):
                self.report(t, none_leaf(self, d, rule, p, t, inner_t.kind == NONE))
                return

    def _wraps_like_primal(self, d: CustomDerivative, rule: RuleFunction, primal_expr: ast.expr,
                           tangent_expr: ast.expr) -> bool:
        """`return x, (dx,)` where `x` and `dx` are both made as the primal makes its output (the same
        solver called twice): `dx` has `x`'s structure, and a container around it cannot. Reported here."""
        if not (isinstance(tangent_expr, (ast.Tuple, ast.List)) and len(tangent_expr.elts) == 1):
            return False
        why = primal_like(self.model, d, primal_expr)
        inner = primal_like(self.model, d, tangent_expr.elts[0])
        if why is None or inner is None:
            return False
        kind = "tuple" if isinstance(tangent_expr, ast.Tuple) else "list"
        self.report(tangent_expr,
                    f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output "
                    f"`{self.quote(primal_expr, 30)}` ({why}) with the tangent `{self.quote(tangent_expr, 40)}`, a "
                    f"1-element {kind} around `{self.quote(tangent_expr.elts[0], 30)}` ({inner}): both have the "
                    f"primal output's structure, so the container makes the tangent's differ; JAX requires the "
                    f"tangent to have the primal output's structure, so differentiating `{d.name}` (jvp, grad, "
                    f"jacfwd) raises TypeError \"Custom JVP rule {getattr(rule.called, 'name', '<lambda>')} for "
                    f"function {d.name} must produce primal and tangent outputs with equal container (pytree) "
                    f"structures\". Return the tangent itself, without the container")
        return True

    def _wraps_own_tangent(self, d: CustomDerivative, fn, rule: RuleFunction, primal_expr: ast.expr, tangent_expr: ast.expr) -> bool:
        """`return x, (t,)` where `x` and `t` are the primal and the tangent JAX passed at the same
        position (or `t` through `jnp.where` or arithmetic with a constant): whatever `x` is, its
        tangent has its structure, and a 1-element container around it does not. Reported here."""
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args][rule.bound_positional:]
        if not isinstance(primal_expr, ast.Name) or len(params) < 2 or isinstance(fn, ast.Lambda):
            return False
        primals, tangents = unpacked(fn, params[-2]), unpacked(fn, params[-1])
        if primal_expr.id not in primals:
            return False
        if whole(tangent_expr, params[-1], self.model):  # `return x, tangents`: the tuple holding x's tangent
            i = primals.index(primal_expr.id)
            own = tangents[i] if i < len(tangents) and tangents[i] else f"{params[-1]}[{i}]"
            self.report(tangent_expr, f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output "
                        f"`{primal_expr.id}` (the primal JAX passed at position {i}) with the "
                        f"tangent `{self.quote(tangent_expr, 50)}`, the whole tuple of tangents JAX passed (one per "
                        f"differentiable argument), which holds `{primal_expr.id}`'s tangent inside it and so never has "
                        f"`{primal_expr.id}`'s structure: JAX requires the tangent to have the primal output's structure, "
                        f"so differentiating it (jvp, grad, jacfwd) raises TypeError \"Custom JVP rule "
                        f"{getattr(rule.node, 'name', '<lambda>')} for function {d.name} must produce primal and tangent "
                        f"outputs with equal container (pytree) structures\". Return the tangent of `{primal_expr.id}` "
                        f"alone (`{own}`)")
            return True
        if not (isinstance(tangent_expr, (ast.Tuple, ast.List)) and len(tangent_expr.elts) == 1):
            return False
        i = primals.index(primal_expr.id)
        if i >= len(tangents) or tangents[i] is None or not carries(tangent_expr.elts[0], tangents[i], self.model, fn):
            return False
        self.report(tangent_expr,
                    f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output `{primal_expr.id}` (the primal JAX "
                    f"passed at position {i}) with the tangent `{self.quote(tangent_expr, 50)}`, a 1-element "
                    f"{'tuple' if isinstance(tangent_expr, ast.Tuple) else 'list'} around `{tangents[i]}`, the "
                    f"tangent JAX passed for it, which has `{primal_expr.id}`'s structure: JAX requires the tangent "
                    f"to have the primal output's structure, so differentiating it (jvp, grad, jacfwd) raises "
                    f"TypeError \"Custom JVP rule {getattr(rule.node, 'name', '<lambda>')} for function {d.name} must produce primal and tangent outputs with equal container "
                    f"(pytree) structures\". Return the tangent itself, without the container")
        return True

    def _check_defjvps(self, d: CustomDerivative, rule: RuleFunction, index: int) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)
        primal = self.model.facts.primal_output(d)
        if primal is None or primal.kind == NONE:
            return
        env = self.model.facts.rule_environment(d, fn, "defjvps", rule.bound_positional)
        for node, value in self.model.facts.returns_of(fn):
            tangent = self.model.facts.structure(d, value, fn, env)
            if tangent is None or tangent.kind == NONE or primal.same_as(tangent):
                continue
            self._report(d, rule, value if value is not None else node, tangent, primal, "the function's output",
                         f"defjvps rule {index}")

    def _report(self, d: CustomDerivative, rule: RuleFunction, node: ast.AST, tangent: Struct, primal: Struct,
                where: str, label: str = "") -> None:
        # defjvps wraps its rules into one rule named `jvp`, for a function JAX names by the primal
        jax_name = "jvp" if label else getattr(rule.called, "name", "<lambda>")
        evidence = f" ({primal.why})" if primal.why and primal.why != "a literal" else ""
        shown = self.quote(node, 50) if isinstance(node, ast.expr) else "the return"
        self.report(node, f"{label or rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the tangent `{shown}`, "
                          f"{'a Python number (one leaf)' if tangent.why == 'a number' else tangent.describe()}, "
                          f"but {where} is {primal.describe()}{evidence}: JAX requires the "
                          f"tangent to have the primal output's structure, so differentiating `{d.name}` (jvp, grad, "
                          f"jacfwd) raises TypeError \"Custom JVP rule {jax_name} for function {d.name} must produce "
                          f"primal and tangent outputs with equal container (pytree) structures\". Return a tangent "
                          f"shaped like the output ({primal.describe()})")
