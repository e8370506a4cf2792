from __future__ import annotations

import ast
from typing import List, Set

from vjplint.diagnostics import Severity
from vjplint.facts.pullbacks import Pullback
from vjplint.facts.ranks import Rank, Ranks
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.syntax.walk import walk

SHAPE_ERROR = ("`ValueError: Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
               "primal function, but at output[0] the bwd rule produced an output of type float32[] corresponding "
               "to an input of type float32[...], so the shapes do not match`")
PULLBACK_ERROR = ("`ValueError: unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got float32[...], "
                  "but expected float32[...] because the corresponding output of the differentiated function had "
                  "JAX type float32[...]`")


TOTALS = frozenset({"sum", "mean", "nansum", "nanmean", "prod", "max", "min", "amax", "amin"})


class BwdCotangentRank(Rule):
    """## What it does
    Flags a custom_vjp bwd rule that returns, as an argument's cotangent, an expression of the
    output cotangent `g` whose rank provably differs from that argument's. The ranks are read
    relative to the primal's parameters: the primal `jnp.sum(x)` (no axis) returns a scalar, so
    `g` is a scalar, and returning `(g,)` or `(g / n,)` for `x` is only right when `x` is a
    scalar; the primal `x[0]` makes `g` one rank lower than `x`, so `(g,)` is always wrong.
    Residuals that are Python scalars (`x.size`) keep the rank; anything unknown is silent.

    A cotangent reduced over every axis (`jnp.sum(dq)`, `dq.mean()`, with no `axis=`) is a
    scalar: it is flagged as an error where the code shows the parameter is not one (indexed,
    its `shape` read at a position, an `einsum` operand with a named term, an operand of `@`, a
    matrix of `jnp.linalg`, reduced over a named axis), in the primal, fwd, bwd (through the
    residuals) or a helper of the module they pass it to. Summing the cotangent of a parameter
    nothing shows to have axes (a broadcast scale) is left alone.

    The same goes for a `jax.vjp` pullback that fwd saves for bwd: when fwd returns
    `jax.vjp(f, x)` (or `out, pull = jax.vjp(f, x)` and then `out` first), the pullback wants a
    cotangent shaped like the custom function's output, as bwd's `g` is. bwd that reduces `g`
    first (`pull(jnp.sum(g))`, `pull(g.mean())`, `pull(g[0])`) is flagged.

    ## Why is this bad?
    JAX checks every cotangent against its input's shape. Measured on JAX 0.10.2
    (docs/facts/structure.md): `grad`, `jit(grad)` and `vmap(grad)` raise

        ValueError: Custom VJP bwd rule must produce an output with the same type as the args
        tuple of the primal function, but at output[0] the bwd rule produced an output of type
        float32[] corresponding to an input of type float32[2], so the shapes do not match

    whenever `x` is not a scalar (jax-ml/jax#28757); a scalar `x` works. The rule says "may"
    where the difference depends on `x` being a scalar. A pullback given `jnp.sum(g)` for a
    non-scalar output raises in `grad`, `jit(grad)` and `vmap(grad)` (jax-ml/jax#7238):

        ValueError: unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got
        float32[], but expected float32[3] because the corresponding output of the
        differentiated function had JAX type float32[3]

    ## Example
    ```python
    def total_fwd(x):
        return jnp.sum(x), x.shape

    def total_bwd(shape, g):
        return (g,)
    ```

    ## Use instead
    ```python
    def total_bwd(shape, g):
        return (jnp.broadcast_to(g, shape),)
    ```

    ## Fix safety
    No fix: the input's shape has to be saved in the residuals first.
    """

    CODE = "VJP322"
    NAME = "bwd-cotangent-rank"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def total(x):
    return jnp.sum(x)

def total_fwd(x):
    return jnp.sum(x), x.shape

def total_bwd(shape, g):
    return (g,)

total.defvjp(total_fwd, total_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def total(x):
    return jnp.sum(x)

def total_fwd(x):
    return jnp.sum(x), x.shape

def total_bwd(shape, g):
    return (jnp.broadcast_to(g, shape),)

total.defvjp(total_fwd, total_bwd)
''']

    def check(self) -> None:
        self._reported: Set[ast.AST] = set()
        facts = self.model.facts
        for d, fwd, bwd, params in self.model.facts.registered_bwds(lambda d: bool(facts.differentiable_names(d))):
            assert bwd.node is not None
            out_rank = self._primal_rank(d)
            g = params[-1]
            if fwd is not None and fwd.node is not None:
                self._check_pullbacks(d, fwd, bwd, params[-2], g, out_rank)
            self._check_reduced(d, bwd, list(facts.differentiable_names(d) or ()))
            if out_rank is None:
                continue
            ranks = self.model.facts.ranks(bwd.node, {g: Rank(out_rank.base, out_rank.offset,
                                                         f"`{g}` is the cotangent of `{d.name}`'s output, "
                                                         f"{out_rank.why}", out_rank.floor)})
            self._check_returns(d, bwd, ranks, g, list(facts.differentiable_names(d) or ()))

    def _check_pullbacks(self, d: CustomDerivative, fwd: RuleFunction, bwd: RuleFunction, res: str, g: str,
                         out_rank: "Rank | None") -> None:
        """A pullback of fwd's primal output, called in bwd with `g` reshaped."""
        assert bwd.node is not None
        held = {name: p for name, p in self.model.facts.saved(fwd, bwd.node, res, rule_label(fwd, "fwd")).items()
                if p.of_output}
        if not held:
            return
        g_rank = out_rank or Rank(g, 0)
        ranks = self.model.facts.ranks(bwd.node, {g: g_rank})
        for node in self.model.facts.own_nodes(bwd.node):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.func.id not in held \
                    or len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
                continue
            arg = node.args[0]
            if not any(isinstance(n, ast.Name) and n.id == g for n in walk(arg)):
                continue
            got = ranks.of(arg)
            if got is None or got.base == g_rank.base and got.offset == g_rank.offset:
                continue
            surely = self.model.facts.differ(got, g_rank)
            if not surely and not (got.base is None and got.offset == 0):
                continue  # only a reduction to a scalar is read where the output's rank is unknown
            self.report(arg, self._pullback_message(d, bwd, node.func.id, held[node.func.id], arg, got, g_rank,
                                                    g, surely))

    def _pullback_message(self, d: CustomDerivative, bwd: RuleFunction, name: str, pullback: Pullback,
                          arg: ast.expr, got: Rank, g_rank: Rank, g: str, surely: bool) -> str:
        shaped = f" ({g_rank.why})" if g_rank.why else ""
        head = (f"{rule_label(bwd, 'bwd')} passes `{self.quote(arg, 40)}`, {got.text()}, to `{name}`, the pullback "
                f"of {pullback.origin}; that pullback wants a cotangent shaped like `{d.name}`'s output{shaped}, "
                f"as `{g}` is")
        if surely:
            return f"{head}: differentiating `{d.name}` raises {PULLBACK_ERROR}; pass `{g}` itself (`{name}({g})`)"
        return (f"{head}: unless `{d.name}` returns a scalar, differentiating it may raise {PULLBACK_ERROR}; pass "
                f"`{g}` itself (`{name}({g})`)")

    def _primal_rank(self, d: CustomDerivative):
        assert d.primal is not None
        returns = self.model.facts.returns_of(d.primal)
        if len(returns) != 1 or returns[0].value is None:
            return None
        found = self.model.facts.own_ranks(d.primal).of(returns[0].value)
        if found is None:
            return None
        quoted = f"`{self.quote(returns[0].value, 40)}`"
        why = found.why if found.why.startswith(quoted) else f"{quoted} ({found.why})"
        return Rank(found.base, found.offset, why, found.floor)

    def _check_returns(self, d: CustomDerivative, bwd: RuleFunction, ranks: Ranks, g: str, names: List[str]) -> None:
        assert bwd.node is not None
        for _, value in self.model.facts.returns_of(bwd.node):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(names):
                continue
            for element, name in zip(value.elts, names):
                if not any(isinstance(n, ast.Name) and n.id == g for n in walk(element)):
                    continue
                got = ranks.of(element)
                if got is None or got.base not in (None, name) or got.base is None and got.offset != 0:
                    continue
                if got.base == name and got.offset == 0 or element in self._reported:
                    continue
                self.report(element, self._message(d, bwd, element, name, got, ranks.env[g]))

    def _check_reduced(self, d: CustomDerivative, bwd: RuleFunction, names: List[str]) -> None:
        """A cotangent reduced over every axis (`jnp.sum(dq)`, `dq.mean()`) for a parameter the
        code shows to have axes (or to be a container): a scalar where JAX wants `q`'s shape."""
        assert bwd.node is not None
        for _, value in self.model.facts.returns_of(bwd.node):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(names):
                continue
            for element, name in zip(value.elts, names):
                reduced = self._full_reduction(bwd, element)
                if reduced is None or element in self._reported:
                    continue
                axes = self.model.facts.param_axes(d, name)
                if axes is None:
                    continue
                self._reported.add(element)
                self.report(element, f"{rule_label(bwd, 'bwd')} returns `{self.quote(element, 40)}` as the cotangent of "
                                     f"`{name}`, a scalar ({self._reduces(element, reduced)}), but "
                                     f"`{name}` is not a scalar: {axes.why}; differentiating `{d.name}` raises "
                                     f"{SHAPE_ERROR}; return a cotangent shaped like `{name}` (reduce only the axes "
                                     f"that broadcasting added, with `axis=`)", severity=Severity.ERROR)

    def _reduces(self, element: ast.expr, reduced: ast.expr) -> str:
        return "it reduces over every axis" if element is reduced else \
            f"`{self.quote(element, 20)}` is `{self.quote(reduced, 40)}`, which reduces over every axis"

    def _full_reduction(self, bwd: RuleFunction, element: ast.expr):
        """`jnp.sum(e)`, `jnp.mean(e)`, `e.sum()` (no axis), or a name bound once to one."""
        assert bwd.node is not None
        for _ in range(4):
            if not isinstance(element, ast.Name):
                break
            scope = self.model.index.scopes.get(bwd.node)
            bindings = scope.bindings.get(element.id, []) if scope is not None else []
            if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].node, ast.Assign) \
                    or bindings[0].value is None or not isinstance(bindings[0].node.targets[0], ast.Name):
                return None
            element = bindings[0].value
        if not isinstance(element, ast.Call) or element.keywords:
            return None
        q = self.model.index.qualname(element.func) or ""
        if q.startswith(("jax.numpy.", "numpy.")) and q.rsplit(".", 1)[-1] in TOTALS and len(element.args) == 1 \
                and not isinstance(element.args[0], ast.Starred):
            return element
        if not q and isinstance(element.func, ast.Attribute) and element.func.attr in TOTALS and not element.args:
            return element
        return None

    def _message(self, d: CustomDerivative, bwd: RuleFunction, element: ast.expr, name: str, got: Rank,
                 g: Rank) -> str:
        shown = f"`{self.quote(element, 40)}`"
        head = (f"{rule_label(bwd, 'bwd')} returns {shown} as the cotangent of `{name}`, but it has {got.text()} "
                f"({g.why}) where `{name}`'s cotangent needs `{name}`'s shape")
        if got.base is None:
            return (f"{head}: unless `{name}` is a scalar, differentiating `{d.name}` may raise {SHAPE_ERROR}; "
                    f"broadcast it to `{name}`'s shape (save `jnp.shape({name})` in the residuals and return "
                    f"`jnp.broadcast_to({self.quote(element, 30)}, shape)`)")
        return (f"{head}: differentiating `{d.name}` raises {SHAPE_ERROR}; give the cotangent `{name}`'s shape "
                f"(scatter it back into `jnp.zeros_like({name})` at the indexed place)")
