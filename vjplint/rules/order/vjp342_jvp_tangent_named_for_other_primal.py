from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.syntax.walk import walk

# How a tangent's name says which primal it belongs to: `t_x`, `x_t`, `x_dot`, `dx`, ...
PATTERNS = ("t_{}", "{}_t", "{}_dot", "{}dot", "dot_{}", "d{}", "d_{}", "{}_tangent", "tangent_{}", "{}_tan",
            "tan_{}", "{}_d", "δ{}", "{}_bar")


class JvpTangentNamedForOtherPrimal(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule that unpacks both its primals and its tangents (`x, cond =
    primals` and `_, t_x = tangents`) and gives a tangent the name of a primal it unpacked at
    another position (`t_x`, `x_dot`, `dx` for `x`) and not of the one at its own: JAX passes the
    tangents in the primals' order, so that name holds another input's tangent. A `_`
    placeholder in the tangents counts as a position. Where the rule's primal names are the
    function's own parameter names and two or more tangents are misplaced, `VJP334` reports it.

    ## Why is this bad?
    The rule computes with the wrong input's tangent: an integer or boolean input's tangent is a
    `float0` array, so differentiating raises `TypeError: Custom JVP rule must produce primal and
    tangent outputs with corresponding shapes and dtypes. Expected float32[4] ... but got
    float0[4]`; inputs of other shapes raise in the rule's own arithmetic (`dot_general requires
    contracting dimensions to have the same shape`); inputs of the same shape give silently
    wrong derivatives.

    ## Example
    ```python
    @clip.defjvp
    def clip_jvp(primals, tangents):
        x, cond = primals
        _, t_x = tangents
        return clip(x, cond), t_x
    ```

    ## Use instead
    ```python
    @clip.defjvp
    def clip_jvp(primals, tangents):
        x, cond = primals
        t_x, _ = tangents
        return clip(x, cond), t_x
    ```

    ## Fix safety
    No automatic fix: the name may be what is wrong.
    """

    CODE = "VJP342"
    NAME = "jvp-tangent-named-for-other-primal"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def clip(x, cond):
    return jnp.where(cond, jnp.clip(x, 0, 1), x)

@clip.defjvp
def clip_jvp(primals, tangents):
    x, cond = primals
    _, t_x = tangents
    return clip(x, cond), t_x
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def clip(x, cond):
    return jnp.where(cond, jnp.clip(x, 0, 1), x)

@clip.defjvp
def clip_jvp(primals, tangents):
    x, cond = primals
    t_x, _ = tangents
    return clip(x, cond), t_x
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg, rule in self.model.facts.jvp_rules(d):
            fn = rule.node
            if reg.method != "defjvp" or fn is None or fn in self._done or isinstance(fn, ast.Lambda) \
                    or fn.args.vararg:
                continue
            self._done.add(fn)
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][rule.bound_positional:]
            if len(params) < 2:
                continue
            primals, tangents = _unpacked(fn, params[-2]), _unpacked(fn, params[-1])
            if primals is None or tangents is None or len(primals[0]) != len(tangents[0]):
                continue
            moved = [(i, t, j) for i, t in enumerate(tangents[0]) if t is not None
                     for j in [_named_for(t, primals[0], i)] if j is not None]
            if not moved or any(u.node.targets[0] is tangents[1] or u.what == "primals" for u in
                                self.model.facts.misordered_jvp_unpackings(d, fn, params[-2], params[-1])):
                continue  # a reordering of the function's parameters, shown by names or by flow: VJP334's
            self._report(d, rule, tangents[1], primals[0], moved)

    def _report(self, d: CustomDerivative, rule: RuleFunction, node: ast.AST, primals: List[Optional[str]],
                moved: List[Tuple[int, str, int]]) -> None:
        i, name, j = moved[0]
        also = "".join(f"; so is `{t}` (position {k}, `{primals[k]}`'s)" for k, t, _ in moved[1:])
        held = f"`{primals[i]}`'s" if primals[i] else f"the input's at position {i}"
        self.report(node, f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` unpacks the primals as "
                          f"`{', '.join(p or '_' for p in primals)}` but names the tangent at position {i} `{name}`, "
                          f"for `{primals[j]}` (position {j}): JAX passes the tangents in the primals' order, so "
                          f"`{name}` holds {held} tangent{also}. The rule may compute with the wrong input's "
                          f"tangent: a float0 tangent (an integer or boolean input) or another shape raises when "
                          f"`{d.name}` is differentiated, the same shape gives silently wrong derivatives; unpack "
                          f"the tangents in the primals' order")


def _unpacked(fn: ast.AST, param: str) -> Optional[Tuple[List[Optional[str]], ast.AST]]:
    """The names `fn` unpacks `param` into (None for `_` or a non-name), with the target, once:
    `a, b = primals`, `(a, b), (ta, tb) = primals, tangents`."""
    for node in walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        pairs = [(target, value)]
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Tuple) and \
                len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        for t, v in pairs:
            if isinstance(v, ast.Name) and v.id == param and isinstance(t, (ast.Tuple, ast.List)) and \
                    not any(isinstance(e, ast.Starred) for e in t.elts):
                return [e.id if isinstance(e, ast.Name) and e.id != "_" else None for e in t.elts], t
    return None


def _named_for(tangent: str, primals: List[Optional[str]], position: int) -> Optional[int]:
    """The other position whose primal `tangent` is named for, when it is not named for its own."""
    def names(p: Optional[str]) -> bool:
        return p is not None and len(p) > 0 and any(tangent == pattern.format(p) for pattern in PATTERNS)
    if names(primals[position]):
        return None
    hits = [j for j, p in enumerate(primals) if j != position and names(p)]
    return hits[0] if len(hits) == 1 else None
