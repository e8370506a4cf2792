from __future__ import annotations

import ast
from typing import Set

from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

# Parameter names that say what a bwd parameter receives.
COTANGENT_NAMES = frozenset({
    "g", "ct", "cts", "cot", "cotangent", "cotangents", "ct_out", "cts_out", "out_ct", "g_out", "gout",
    "grad", "grads", "grad_out", "out_grad", "dout", "d_out", "dy", "ybar", "y_bar", "out_bar", "upstream",
    "ct_y", "g_y", "dL_dy", "grad_output", "grad_outputs", "output_grad", "grad_y", "gy", "do", "d_o",
})
# `_`: a bwd that ignores its second parameter ignores the cotangent when the names are swapped
RESIDUAL_NAMES = frozenset({"res", "resid", "residual", "residuals", "saved", "ctx", "cache", "saved_tensors", "_"})
# Words of a longer name that say the same (`grad_in`, `out_cts`; `fwd_res`, `saved_values`).
COTANGENT_WORDS = frozenset({"g", "ct", "cts", "cot", "cotangent", "cotangents", "grad", "grads", "gradient",
                             "gradients", "bar", "dy", "dout", "upstream"})
RESIDUAL_WORDS = frozenset({"res", "resid", "residual", "residuals", "saved", "ctx", "cache"})


class BwdSwappedParams(Rule):
    """## What it does
    Flags a custom_vjp bwd rule whose residual and cotangent parameters are named in the
    wrong order: cotangent first, residuals second, such as `(g, res)`, `(ct, res)` or
    `(cotangent, residuals)` (after any nondiff parameters). Both names must match: a
    cotangent-like name (`g`, `ct`, `cotangent`, `grad`, `dy`, ...) in the residual slot and a
    residual-like name (`res`, `residuals`, `saved`, `ctx`, `cache`) in the cotangent slot; a longer
    name counts by its `_`-separated words (`grad_in`, `out_cts`; `saved_residuals`, `fwd_res`) when
    none of them is of the other kind. A residual-like name in the cotangent slot that the body
    indexes or unpacks, beside a first parameter it never does (`def bwd(gtm, res): spin = res[1]`),
    is flagged too: the body reads the residuals from where JAX passes the cotangent.
    It stays silent when the body treats the first parameter as the residuals (unpacks or
    indexes it) and not the second: then only the names are odd. Where the names say nothing
    (`a0`, `a1`), the use decides: bwd unpacking exactly the residuals fwd saves (`out, (x, w)`)
    from its last parameter, and never the one JAX passes the residuals, "may" have them swapped.

    It also flags a bwd that names a nondiff parameter of the primal at another place than JAX
    passes it (`def bwd(res, g, axis)` for `nondiff_argnums=(1,)`, the nondiff values moved last):
    an error, since the residuals then receive a nondiff value.

    ## Why is this bad?
    JAX calls `bwd(*nondiff, residuals, cotangent)` positionally. With the names swapped, `g`
    holds the residuals and `res` the output cotangent. Nothing checks this: when the shapes
    happen to fit, `grad` returns a silently wrong result (jax-facts: `[3, 6, 9]` instead of
    `[3, 3, 3]`).

    ## Example
    ```python
    def f_bwd(g, res):
        return (g * jnp.cos(res),)
    ```

    ## Use instead
    ```python
    def f_bwd(res, g):
        return (g * jnp.cos(res),)
    ```

    ## Fix safety
    No fix: only the author knows which of the two the body means.
    """

    CODE = "VJP308"
    NAME = "bwd-swapped-params"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(g, res):
    return (g * jnp.cos(res),)

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

def f_bwd(res, g):
    return (g * jnp.cos(res),)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        nondiff = self.model.facts.nondiff_positions(d)
        if nondiff is None:
            return
        nd = len(nondiff)
        for _, _, bwd in self.model.facts.checked_vjp_rules(d):
            arity = self.model.facts.rule_arity(bwd)
            if bwd is None or bwd.node is None or arity is None or bwd.node in self._seen:
                continue
            if arity.vararg or len(arity.names) < nd + 2 or not arity.accepts(nd + 2):
                continue
            if nd and self._nondiff_misplaced(d, bwd, arity.names, nondiff):
                continue
            first, second = arity.names[nd], arity.names[nd + 1]
            if not (_says(first, COTANGENT_NAMES, COTANGENT_WORDS) and _says(second, RESIDUAL_NAMES, RESIDUAL_WORDS)):
                if _says(second, RESIDUAL_NAMES, RESIDUAL_WORDS) and not _says(first, RESIDUAL_NAMES, RESIDUAL_WORDS) \
                        and _used_as_container(bwd.node, second) and not _used_as_container(bwd.node, first):
                    self._residuals_read_from_cotangent(d, bwd, first, second, nd, arity.names)
                    continue
                self._by_use(d, bwd, first, second)  # names that say nothing: how the body uses them
                continue
            if _used_as_container(bwd.node, first) and not _used_as_container(bwd.node, second):
                continue  # the body already treats `first` as the residuals
            self._seen.add(bwd.node)
            order = "bwd(" + ", ".join([*arity.names[:nd], "residuals", "cotangent"]) + ")"
            self.report(self.model.name_anchor(bwd.node),
                        f"{rule_label(bwd, 'bwd')} names its parameters ({first}, {second}), cotangent first, but "
                        f"JAX calls {order}: `{first}` receives the residuals and `{second}` the output "
                        f"cotangent, so the gradient of `{d.name}` is silently wrong (nothing checks it when the "
                        f"shapes fit); swap them: ({second}, {first})")

    def _nondiff_misplaced(self, d: CustomDerivative, bwd: RuleFunction, names, nondiff) -> bool:
        """bwd names a nondiff parameter of the primal at another place than JAX passes it
        (`def bwd(res, g, axis)` for `nondiff_argnums=(1,)`): JAX passes the nondiff values first."""
        if bwd.node is None or d.primal is None:
            return False
        sig = d.signature  # as callers see it: a partial's bound leading parameters are not counted
        if sig is None:
            return False
        params = sig.positional
        wanted = [params[i] for i in nondiff if i < len(params)]
        if len(wanted) != len(nondiff) or len(set(names)) != len(names):
            return False
        moved = [(name, names.index(name), j) for j, name in enumerate(wanted)
                 if name in names and names.index(name) != j and names.index(name) < len(nondiff) + 2]
        n = min(len(names), len(params))
        if not moved or n >= 2 and tuple(names[:n]) == tuple(params[:n]):
            return False  # bwd spells its parameters as the primal does, place by place (`a0, a1, a2`
            # everywhere): the names say nothing about what JAX passes
        self._seen.add(bwd.node)
        name, at, j = moved[0]
        nd = len(nondiff)
        order = "bwd(" + ", ".join([*wanted, "residuals", "cotangent"]) + ")"
        got = names[j] if j < len(names) else "?"
        self.report(self.model.name_anchor(bwd.node),
                    f"{rule_label(bwd, 'bwd')} takes the nondiff argument `{name}` as its parameter {at + 1} "
                    f"(`{', '.join(names[:nd + 2])}`), but JAX calls {order}, the nondiff values first: "
                    f"`{got}` receives `{name}`'s value and `{name}` receives "
                    f"{'the residuals' if at == nd else 'the output cotangent' if at == nd + 1 else 'another nondiff value'}, "
                    f"so differentiating `{d.name}` raises where bwd unpacks or uses them (`cannot unpack non-iterable "
                    f"...`, `... has no attribute ...`) or gives wrong gradients; put the nondiff parameters first: "
                    f"`{', '.join([*wanted, *[n for n in names[:nd + 2] if n not in wanted]])}`",
                    severity=Severity.ERROR)
        return True

    def _residuals_read_from_cotangent(self, d: CustomDerivative, bwd: RuleFunction, first: str, second: str,
                                       nd: int, names) -> None:
        """`def bwd(gtm, res)` whose body indexes or unpacks `res` and never `gtm`: named and read as the
        residuals, in the place where JAX passes the cotangent."""
        assert bwd.node is not None
        self._seen.add(bwd.node)
        order = "bwd(" + ", ".join([*names[:nd], "residuals", "cotangent"]) + ")"
        self.report(self.model.name_anchor(bwd.node),
                    f"{rule_label(bwd, 'bwd')} reads the residuals from `{second}` (it indexes or unpacks it, and "
                    f"never `{first}`), but JAX calls {order}: `{second}` receives the output cotangent of "
                    f"`{d.name}` and `{first}` the residuals, so the gradient is wrong or the rule raises when the "
                    f"shapes do not fit; swap them: ({second}, {first})")

    def _by_use(self, d: CustomDerivative, bwd: RuleFunction, first: str, second: str) -> None:
        assert bwd.node is not None
        unpacked = self.model.facts.residuals_from_cotangent(d, bwd)
        if unpacked is None:
            return
        self._seen.add(bwd.node)
        self.report(self.model.name_anchor(bwd.node),
                    f"{rule_label(bwd, 'bwd')} may take its parameters in the wrong order: it unpacks the "
                    f"residuals fwd saves from `{second}` (`{self.quote(unpacked.targets[0], 40)} = {second}`), but "
                    f"JAX passes `{second}` the cotangent of `{d.name}`'s output and "
                    f"`{first}` the residuals, which the body never unpacks; the gradient of `{d.name}` is then "
                    f"silently wrong when the shapes fit. Swap them: ({second}, {first})")


def _says(name: str, names: frozenset, words: frozenset) -> bool:
    """`name` is one of `names`, or one of its `_`-separated words is one of `words` (`grad_in`,
    `saved_res`) and none is of the other kind."""
    if name in names:
        return True
    parts = set(name.lower().split("_"))
    other = RESIDUAL_WORDS if words is COTANGENT_WORDS else COTANGENT_WORDS
    return bool(parts & words) and not parts & other


def _used_as_container(fn: FunctionNode, name: str) -> bool:
    """True when `name` is tuple-unpacked (`a, b = name`) or indexed (`name[0]`) in `fn`."""
    for node in walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
            return True
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == name \
                and any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            return True
    return False
