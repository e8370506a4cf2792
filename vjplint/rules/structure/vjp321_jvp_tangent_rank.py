from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.facts.ranks import ARRAY_PREFIXES, REDUCTIONS, Rank, Ranks
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._primal_like import primal_like

SHAPE_ERROR = ("`TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
               "dtypes ...`")


class JvpTangentRank(Rule):
    """## What it does
    Flags a custom_jvp rule (`defjvp`) whose tangent output provably has another rank than its
    primal output. Ranks are followed relative to the primal arguments: indexing with an integer
    drops an axis (`q[0]`, `z[..., 0]`), `None` adds one, elementwise functions and arithmetic
    broadcast, `jnp.sum(x)` without an axis is a scalar, `jnp.sum(x, axis=-1)` drops one axis (none
    with `keepdims=True`) and needs `x` to have one, and a call of the function itself has the rank
    its return shows. A tangent of `q`'s rank returned with a primal of rank `q` minus one is the
    slip of jax-ml/jax#2502. When the ranks agree only for the least rank an `axis=` allows (a
    scalar tangent for `jnp.sum(d, axis=-1)`: only a 1-D `d`) it is a warning that a batch may
    raise (jax-ml/jax#6121). A tangent reduced over every axis (`jnp.sum(t)`, `v.mean()`) with a
    primal output at least as ranked as an argument (elementwise in it, or a call of the function
    that is) is a warning too: they agree only for a scalar argument, where the reduction does
    nothing. So is such a reduction of a term made as the primal output is made (its function
    called with the same layout, as in the primal), returned with a primal output made that way:
    they agree only for a scalar output. So is such a reduction returned with a primal output
    nothing shows may be a scalar (no reduction, contraction, `@` or integer index on its way, in
    the rule or in the function, followed through names, tuple unpacking and the module's
    helpers; a parameter counts as the array it is differentiated as). Anything unknown (an axis in a name, a `reshape`, a
    helper) is silent.

    ## Why is this bad?
    The tangent must have the primal output's shape. Measured on JAX 0.10.2
    (docs/facts/structure.md): eager calls work, but `jvp`, `grad`, `jit(grad)` and `vmap(grad)` raise

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes. Expected float32[] (tangent type of float32[]) but got float32[1].

    ## Example
    ```python
    @jax.custom_jvp
    def f(q):
        return jnp.logaddexp(q[0], 0.0)

    @f.defjvp
    def f_jvp(primals, tangents):
        (q,), (q_dot,) = primals, tangents
        return f(q), jax.nn.sigmoid(q) * q_dot
    ```

    ## Use instead
    ```python
        return f(q), jax.nn.sigmoid(q[0]) * q_dot[0]
    ```

    ## Fix safety
    No fix: where the tangent should be indexed or reduced is the author's choice.
    """

    CODE = "VJP321"
    NAME = "jvp-tangent-rank"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(q):
    return jnp.logaddexp(q[0], 0.0)

@f.defjvp
def f_jvp(primals, tangents):
    (q,), (q_dot,) = primals, tangents
    return f(q), jax.nn.sigmoid(q) * q_dot
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(q):
    return jnp.logaddexp(q[0], 0.0)

@f.defjvp
def f_jvp(primals, tangents):
    (q,), (q_dot,) = primals, tangents
    return f(q), jax.nn.sigmoid(q[0]) * q_dot[0]
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.primal is None or d.nondiff_unresolved:
            return
        for reg, rule in self.model.facts.jvp_rules(d):
            if rule.node is None or rule.node in self._seen or not self.model.facts.registered_here(d, reg.node):
                continue
            self._seen.add(rule.node)
            ranks = self._ranks(d, rule)
            if ranks is not None:
                self._check_rule(d, rule, ranks)

    def _ranks(self, d: CustomDerivative, rule: RuleFunction) -> Optional[Ranks]:
        """Ranks in the rule: its primals' and tangents' elements relative to the primal's parameters."""
        assert rule.node is not None and d.primal is not None
        sig = d.signature
        params = rule.signature.positional[rule.bound_positional:]  # type: ignore[union-attr]
        k = len(d.nondiff)
        if sig is None or sig.vararg or len(params) != k + 2:
            return None
        diff = [p for i, p in enumerate(sig.positional) if i not in d.nondiff]
        primals, tangents = params[k], params[k + 1]
        items = {primals: [Rank(p, 0, f"`{p}`") for p in diff],
                 tangents: [Rank(p, 0, f"the tangent of `{p}`") for p in diff]}
        env: Dict[str, Rank] = {}
        for node in self.model.facts.own_nodes(rule.node):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._unpack(node.targets[0], node.value, items, env)
        calls = {d.name: d.primal} if isinstance(d.primal, (ast.FunctionDef, ast.AsyncFunctionDef)) else {}
        return self.model.facts.ranks(rule.node, env, calls, items)

    def _unpack(self, target: ast.expr, value: ast.expr, items: Dict[str, List[Rank]], env: Dict[str, Rank]) -> None:
        """`(q,), (q_dot,) = primals, tangents`, `x, = primals`, `x = primals[0]`: names get the ranks they unpack."""
        if isinstance(target, ast.Name) and isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                and value.value.id in items and isinstance(value.slice, ast.Constant) \
                and isinstance(value.slice.value, int) and -len(items[value.value.id]) <= value.slice.value \
                < len(items[value.value.id]):
            env[target.id] = items[value.value.id][value.slice.value]
        elif isinstance(value, ast.Name) and value.id in items and isinstance(target, (ast.Tuple, ast.List)):
            ranks = items[value.id]
            if len(target.elts) == len(ranks):
                for t, r in zip(target.elts, ranks):
                    if isinstance(t, ast.Name):
                        env[t.id] = r
        elif isinstance(value, ast.Tuple) and isinstance(target, (ast.Tuple, ast.List)) and \
                len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                self._unpack(t, v, items, env)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction, ranks: Ranks) -> None:
        assert rule.node is not None
        for _, value in self.model.facts.returns_of(rule.node):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2:
                continue
            for primal_out, tangent_out in self.model.facts.paired_leaves(*value.elts):
                self._check_pair(d, rule, ranks, primal_out, tangent_out)

    def _check_pair(self, d: CustomDerivative, rule: RuleFunction, ranks: Ranks, primal_out: ast.expr,
                    tangent_out: ast.expr) -> None:
        rp, rt = ranks.of(primal_out), ranks.of(tangent_out)
        if self.model.facts.differ(rp, rt):
            assert rp is not None and rt is not None
            relative = rp if rp.base is not None else rt
            needs = "" if rp.base == rt.base else f" (its `axis=` needs `{relative.base}` of rank " \
                                                  f"{relative.floor} or more)"
            self.report(tangent_out, f"{self._returns(d, rule, primal_out, rp, tangent_out, rt)}{needs}: the tangent "
                                     f"must have the primal output's shape, so differentiating `{d.name}` (jvp, "
                                     f"grad, jacfwd) raises {SHAPE_ERROR}; index or reduce the tangent as the "
                                     f"primal output is")
            return
        relative = self.model.facts.agree_only_at_floor(rp, rt)
        if relative is not None:
            assert rp is not None and rt is not None and relative.base is not None
            self.report(tangent_out, f"{self._returns(d, rule, primal_out, rp, tangent_out, rt)}: they agree "
                                     f"only when `{relative.base}` has rank {relative.floor} (the least the "
                                     f"primal's `axis=` allows), so differentiating `{d.name}` with a "
                                     f"`{relative.base}` of more axes (a batch) may raise {SHAPE_ERROR}; reduce "
                                     f"the tangent over the same axes as the primal output",
                        severity=Severity.WARNING)
            return
        number = isinstance(tangent_out, ast.Constant) and type(tangent_out.value) in (int, float)
        if number and (rp is None or rp.base is not None) and not self.model.facts.may_be_scalar(primal_out):
            self.report(tangent_out, (
                f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns the Python number "
                f"`{self.quote(tangent_out, 20)}` as a tangent, a scalar, with a primal output "
                f"`{self.quote(primal_out, 40)}` that nothing shows to be a scalar: they agree only when that "
                f"output is a scalar, so differentiating `{d.name}` with an array output may raise {SHAPE_ERROR}; "
                f"return `jnp.zeros_like({self.quote(primal_out, 30)})` for a zero tangent"), severity=Severity.WARNING)
            return
        reduced = self._reduced_operand(tangent_out)
        if reduced is None or rp is not None and rp.base is None:
            return  # not a reduction over every axis (a scalar whatever its operand), or a scalar primal
        shared = sorted(ranks.at_least(reduced) & ranks.at_least(primal_out)) or \
            self.model.facts.scaled_by(reduced, primal_out)
        like = primal_like(self.model, d, primal_out)
        inner = self._like_primal_in(d, reduced, 0) if like is not None and not shared else None
        if inner is not None:
            self.report(tangent_out, (
                f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns a tangent "
                f"`{self.quote(tangent_out, 40)}`, reduced over every axis to a scalar, with a primal output "
                f"`{self.quote(primal_out, 40)}` ({like}), but what it reduces combines elementwise "
                f"`{self.quote(inner[0], 30)}` ({inner[1]}), made as the output is, so of its rank: they agree only "
                f"when `{d.name}` returns a scalar, where the reduction does nothing; differentiating `{d.name}` "
                f"with an array output may raise {SHAPE_ERROR}; drop the reduction (or reduce the primal output "
                f"the same way)"), severity=Severity.WARNING)
            return
        if not shared and (rp is None or rp.base is not None) and not self.model.facts.may_be_scalar(primal_out):
            self.report(tangent_out, (
                f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns a tangent "
                f"`{self.quote(tangent_out, 40)}`, reduced over every axis to a scalar, with a primal output "
                f"`{self.quote(primal_out, 40)}` that nothing shows to be a scalar (no reduction, contraction or "
                f"integer index on its way, in the rule or in `{d.name}`): they agree only when that output is a "
                f"scalar, so differentiating `{d.name}` with an array output may raise {SHAPE_ERROR}; drop the "
                f"reduction (or reduce the primal output the same way)"), severity=Severity.WARNING)
            return
        if shared:
            base = shared[0]
            self.report(tangent_out, (
                f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns a tangent "
                f"`{self.quote(tangent_out, 40)}`, reduced over every axis to a scalar, with a primal output "
                f"`{self.quote(primal_out, 40)}` of at least the rank of `{base}` (elementwise in it): they "
                f"agree only when `{base}` is a scalar, where the reduction does nothing, so differentiating "
                f"`{d.name}` with an array `{base}` may raise {SHAPE_ERROR}; drop the reduction (or reduce the "
                f"primal output the same way)"), severity=Severity.WARNING)

    def _like_primal_in(self, d: CustomDerivative, e: ast.expr, depth: int):  # -> Optional[(expr, why)]
        """(the value, why) of a value made as the primal makes its output that `e` combines
        elementwise (`2 * f(n - 1, x) * t`, a name bound once to such arithmetic); None otherwise."""
        why = primal_like(self.model, d, e)
        if why is not None or depth > 4:
            return (e, why) if why is not None else None
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div, ast.Add, ast.Sub)):
            return self._like_primal_in(d, e.left, depth + 1) or self._like_primal_in(d, e.right, depth + 1)
        if isinstance(e, ast.UnaryOp):
            return self._like_primal_in(d, e.operand, depth + 1)
        if isinstance(e, ast.Name):
            bindings = self.model.index.lookup(e.id, self.model.index.scope_of(e))
            if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, ast.BinOp):
                return self._like_primal_in(d, bindings[0].value, depth + 1)
        return None

    def _reduced_operand(self, e: ast.expr) -> Optional[ast.expr]:
        """What `e` reduces over every axis (`jnp.sum(v)`, `v.mean()`), if it is such a reduction."""
        if not isinstance(e, ast.Call) or e.keywords:
            return None
        q = self.model.index.qualname(e.func) or ""
        if q.startswith(ARRAY_PREFIXES) and q.rsplit(".", 1)[-1] in REDUCTIONS and len(e.args) == 1:
            return e.args[0]
        if isinstance(e.func, ast.Attribute) and not q and e.func.attr in REDUCTIONS and not e.args:
            return e.func.value
        return None

    def _returns(self, d: CustomDerivative, rule: RuleFunction, primal_out: ast.expr, rp: Rank,
                 tangent_out: ast.expr, rt: Rank) -> str:
        return (f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns a tangent "
                f"{self._shown(tangent_out, rt)} of {rt.text()} with a primal output "
                f"{self._shown(primal_out, rp)} of {rp.text()}")

    def _shown(self, expr: ast.expr, rank: Rank) -> str:
        quoted = f"`{self.quote(expr, 40)}`"
        return quoted if rank.why == quoted else f"{quoted} ({rank.why})"
