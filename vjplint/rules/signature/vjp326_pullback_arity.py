from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.structure import describe
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode

REVERSE = " (grad, jit(grad), vmap(grad))"
Origin = str  # how the name came to hold a pullback, for the message


class PullbackArity(Rule):
    """## What it does
    Flags a call of a `jax.vjp` pullback with other than exactly one positional argument, in a
    custom derivative's primal or rules: the pullback made in the same function
    (`out, pull = jax.vjp(f, x)`, `jax.vjp(..., has_aux=True)`'s second element), or saved by a
    custom_vjp's fwd among its residuals and called in bwd. Arguments are counted where the code
    shows them: written out, or `*g` where `g` is bwd's cotangent of a primal whose output is a
    tuple or list of known length (or any name holding one).

    ## Why is this bad?
    The function `jax.vjp` returns takes one argument: the cotangent of the function's whole
    output, a tuple for a tuple output. Measured on JAX 0.10.2 (docs/facts/scripts/
    pullback_arity.py): `pull(*g)` or `pull(g_a, g_b)` for a function returning a pair raises

        TypeError: The function returned by `jax.vjp` applied to moments was called with 2
        arguments, ...

    (jax-ml/jax#13099); in bwd that happens under `grad`, `jit(grad)` and `vmap(grad)`, while
    eager, `jit` and `vmap` calls work. `pull(g)` and `pull((g_a, g_b))` work.

    ## Example
    ```python
    def combine_fwd(x):
        out, pull = jax.vjp(moments, x)   # moments returns a pair
        return out, pull

    def combine_bwd(pull, g):
        return pull(*g)
    ```

    ## Use instead
    ```python
    def combine_bwd(pull, g):
        return pull(g)
    ```

    ## Fix safety
    No fix: which value is the whole cotangent is the author's to say.
    """

    CODE = "VJP326"
    NAME = "pullback-arity"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    APIS = frozenset({"jax"})

    INVALID = ['''
import jax
import jax.numpy as jnp

def moments(x):
    return jnp.sin(x), jnp.sum(x * x)

@jax.custom_vjp
def combine(x):
    return moments(x)

def combine_fwd(x):
    out, pull = jax.vjp(moments, x)
    return out, pull

def combine_bwd(pull, g):
    return pull(*g)

combine.defvjp(combine_fwd, combine_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

def moments(x):
    return jnp.sin(x), jnp.sum(x * x)

@jax.custom_vjp
def combine(x):
    return moments(x)

def combine_fwd(x):
    out, pull = jax.vjp(moments, x)
    return out, pull

def combine_bwd(pull, g):
    return pull(g)

combine.defvjp(combine_fwd, combine_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        if isinstance(d.primal, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(d, d.primal, f"custom_{d.kind} `{d.name}`", {}, None, "", self._seen)
        when = f" when `{d.name}` is differentiated"
        if d.kind == "jvp":
            for reg, rule in self.model.facts.jvp_rules(d):
                if rule.node is not None and self.model.facts.registered_here(d, reg.node):
                    self._function(d, rule.node, rule_label(rule, "jvp rule"), {}, None, when, self._seen)
            return
        for reg, fwd, bwd in self.model.facts.checked_vjp_rules(d):
            if not self.model.facts.registered_here(d, reg.node):
                continue
            saved: Dict[str, Origin] = {}
            if fwd is not None and fwd.node is not None:
                self._function(d, fwd.node, rule_label(fwd, "fwd"), {}, None, when + REVERSE, self._seen)
            if bwd is not None and bwd.node is not None:
                params = self._bwd_params(d, bwd)
                if params is not None and fwd is not None and fwd.node is not None:
                    saved = {name: p.origin for name, p in
                             self.model.facts.saved(fwd, bwd.node, params[0], rule_label(fwd, "fwd")).items()}
                self._function(d, bwd.node, rule_label(bwd, "bwd"), saved,
                               params[1] if params is not None else None, when + REVERSE, self._seen)

    def _bwd_params(self, d: CustomDerivative, bwd: RuleFunction) -> Optional[Tuple[str, str]]:
        """bwd's residuals and cotangent parameters."""
        assert bwd.node is not None
        params = bwd.signature.positional[bwd.bound_positional:]  # type: ignore[union-attr]
        k = len(d.nondiff)
        if d.nondiff_unresolved or len(params) != k + 2:
            return None
        return params[k], params[k + 1]

    # -- the calls ----------------------------------------------------------------------------
    def _function(self, d: CustomDerivative, fn: FunctionNode, label: str, saved: Dict[str, Origin],
                  cotangent: Optional[str], when: str, seen: Set[ast.AST]) -> None:
        if fn in seen:
            return
        seen.add(fn)
        pullbacks = {**{name: p.origin for name, p in self.model.facts.made_here(fn).items()}, **saved}
        if not pullbacks:
            return
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or \
                    node.func.id not in pullbacks or node.keywords:
                continue
            counted = self._count(d, fn, node.args, cotangent)
            if counted is None or counted[0] == 1:
                continue
            n, why = counted
            name = node.func.id
            self.report(node, f"{label} calls `{name}`, the pullback of {pullbacks[name]}, with {n} "
                              f"argument{'s' if n != 1 else ''} (`{self.quote(node, 40)}`{why}): a `jax.vjp` "
                              f"pullback takes exactly one, the cotangent of the function's whole output (one "
                              f"tuple for a tuple output), so JAX raises TypeError ('The function returned by "
                              f"`jax.vjp` ... was called with {n} arguments'){when}; pass the cotangent as one "
                              f"value (`{name}(g)`, `{name}((g_a, g_b))`)")

    def _count(self, d: CustomDerivative, fn: FunctionNode, args: List[ast.expr],
               cotangent: Optional[str]) -> Optional[Tuple[int, str]]:
        """How many positional arguments the call passes, and why where a `*` hides it."""
        n, why = 0, ""
        for a in args:
            if not isinstance(a, ast.Starred):
                n += 1
                continue
            length: Optional[int] = None
            if isinstance(a.value, ast.Name) and a.value.id == cotangent and self.model.facts.bound_once(fn, cotangent):
                found = self.model.facts.primal_structure(d)
                if found is not None and found[0][0] in ("tuple", "list"):
                    length = found[0][1]
                    why = f"; `{cotangent}` is the cotangent of the output, {describe(found[0])}: {found[1]}"
            else:
                kind = self.model.facts.values().of(a.value)
                if kind.tag in ("tuple", "list") and kind.items is not None:
                    length = len(kind.items)
                    why = f"; `{self.quote(a.value, 30)}` holds {length} values"
            if length is None:
                return None
            n += length
        return n, why
