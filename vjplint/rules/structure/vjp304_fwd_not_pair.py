from __future__ import annotations

import ast
from typing import Optional, Set

from vjplint.diagnostics import Severity
from vjplint.facts.contract import LIST, NONE, TUPLE
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label


class FwdNotPair(Rule):
    """## What it does
    Flags a `return` of a custom_vjp fwd rule that is provably not a pair
    `(primal_out, residuals)`: a tuple or list literal (or a name assigned once to a tuple
    literal) with other than two elements, a bare `return`/`return None`, a constant, a dict, or
    an expression that is provably one array (a `jnp`/`lax`/`jax.nn` function returning one
    array, arithmetic with one). It also flags a fwd that returns the primal's own output,
    whatever its structure: a call of the custom function itself (or a name bound once to one),
    the parameter the primal returns, or the same expression over the same parameters as the
    primal's one `return` (`out, _ = _impl(x); return out` in both, `*args`/`**kwargs` forwarded
    alike; `vjplint/facts/rule_evidence.py`), or a helper whose every return is one array (an
    index only an array takes, `tokens[order, ...]`, counts as one).
    Anything else (a parameter the primal does not return, a helper call) is unknown and stays
    silent.

    The same holds for `flax.nnx.custom_vjp` and linen's `nn.custom_vjp` fwd (flax unpacks the pair
    itself, so the error is a `ValueError`), and for a `jax.custom_gradient` function, which
    must return `(out, vjp_fn)`: JAX unpacks it at every call, eager included.

    ## Why is this bad?
    JAX unpacks fwd's result as `(primal_out, residuals)` and checks that it is a list or tuple
    of length two. Anything else fails as soon as the function is differentiated:

        TypeError: Custom VJP fwd rule f_fwd for function f must produce a pair (list or tuple
        of length two) where the first element represents the primal output ...

    A frequent slip is `return out, a, b`: the residuals must be grouped into one value.
    Another is `return f(x)` or `return out` with the residuals forgotten. JAX does not compare
    the first element with the primal's output: when the primal's output is itself a pair, such
    a fwd raises nothing and JAX takes its first element as the output and the second as the
    residuals (measured on JAX 0.10.2: wrong gradients, no error).

    ## Example
    ```python
    def f_fwd(x):
        y = jnp.sin(x)
        return y, x, jnp.cos(x)
    ```

    ## Use instead
    ```python
    def f_fwd(x):
        y = jnp.sin(x)
        return y, (x, jnp.cos(x))
    ```

    ## Fix safety
    No fix: bwd must unpack the residuals the same way.
    """

    CODE = "VJP304"
    NAME = "fwd-not-pair"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_gradient")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x, jnp.cos(x)

def f_bwd(res, g):
    x, cos_x = res
    return (cos_x * g,)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return [jnp.sin(x), jnp.cos(x)]

def f_bwd(cos_x, g):
    return (cos_x * g,)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        seen: Set[ast.AST] = set()
        for d in self.model.derivatives:
            for _, fwd, _ in self.model.facts.checked_vjp_rules(d):
                if fwd is None or fwd.node is None or fwd.node in seen:
                    continue
                seen.add(fwd.node)
                self._check_fwd(d, fwd)
        for d in self.model.derivatives:
            if d.api == "custom_gradient" and d.primal is not None:
                self._check_custom_gradient(d)

    def _check_custom_gradient(self, d: CustomDerivative) -> None:
        """A jax.custom_gradient function returns `(out, vjp_fn)`; JAX unpacks it at every call."""
        assert d.primal is not None
        error = ("fails at every call, eager included, since JAX unpacks the result as (out, vjp_fn) "
                 "(`ValueError: too many values to unpack (expected 2)` for a 3-element array)")
        for node, value in self.model.facts.returns_of(d.primal):
            if value is not None:
                length = self.model.facts.sequence_length(value, d.primal)
                if length is not None:
                    n, exact, literal = length
                    if n == 2 and exact or not exact and n <= 2:
                        continue
                    count = f"{n}" if exact else f"at least {n}"
                    self.report(node, f"jax.custom_gradient `{d.name}` returns a {count}-element {_kind(literal)}, "
                                      f"not a pair (out, vjp_fn): `{d.name}` {error}; return "
                                      f"`(out, vjp_fn)` with `vjp_fn(g)` returning one cotangent per argument")
                    continue
            why = self.model.facts.not_a_sequence(value, d.primal)
            if why is None:
                continue
            what = "None (a bare `return`)" if value is None else \
                f"`{self.quote(value)}`" + ("" if why == "None" else f" ({why})")
            self.report(node, f"jax.custom_gradient `{d.name}` returns {what}, not a pair (out, vjp_fn): "
                              f"`{d.name}` {error}; return `(out, vjp_fn)` with `vjp_fn(g)` returning one cotangent "
                              f"per argument (or use jax.custom_vjp)")

    def _check_fwd(self, d: CustomDerivative, fwd: RuleFunction) -> None:
        fn = fwd.called  # what JAX calls and names (a helper it returns through is followed)
        assert fn is not None
        label = rule_label(fwd, "fwd")
        error = self.model.facts.fwd_not_pair_error(d, f"`TypeError: Custom VJP fwd rule {getattr(fn, 'name', '<lambda>')} for "
                                      f"function {d.name} must produce a pair (list or tuple of length two) ...`")
        for node, value in self.model.facts.returns_of(fn):
            if value is not None:
                length = self.model.facts.sequence_length(value, fn)
                if length is not None:
                    n, exact, literal = length
                    if n == 2 and exact or not exact and n <= 2:
                        if n == 2 and exact:  # a pair that is the primal's own pair output: residuals forgotten
                            self._check_primal_output(d, fwd, node, value, label)
                        continue
                    count = f"{n}" if exact else f"at least {n}"
                    if n > 2:
                        advice = "return `(primal_out, residuals)` with the residuals grouped into one tuple"
                        if isinstance(literal, (ast.Tuple, ast.List)) and exact and literal is value:
                            first = self.quote(literal.elts[0], 30)
                            rest = ", ".join(self.quote(e, 30) for e in literal.elts[1:])
                            advice += f": `{first}, ({rest})`"
                    else:
                        advice = "return `(primal_out, residuals)` (use `None` when bwd needs no residuals)"
                    shown = "" if literal is value else f" (`{self.quote(value)}` is that tuple)"
                    self.report(node, f"{label} returns a {count}-element {_kind(literal)}{shown}, not a pair "
                                      f"(primal_out, residuals): differentiating `{d.name}` raises {error}; {advice}")
                    continue
            why = self.model.facts.not_a_sequence(value, fn)
            if why is None:
                self._check_inferred(d, fwd, node, value, label, error)
                continue
            if value is None:
                what = "None (a bare `return`)"
            else:
                what = f"`{self.quote(value)}`" + ("" if why == "None" else f" ({why})")
            self.report(node, f"{label} returns {what}, not a pair (primal_out, residuals): differentiating "
                              f"`{d.name}` raises {error}; return `(primal_out, residuals)` (use `None` for no "
                              f"residuals)")


    def _check_inferred(self, d: CustomDerivative, fwd: RuleFunction, node: ast.AST, value: Optional[ast.expr],
                        label: str, error: str) -> None:
        """A return whose value vjplint infers (a helper's tuple, a name bound to one) with other than two elements."""
        if value is None or isinstance(value, (ast.Tuple, ast.List)):
            return
        kind = self.model.facts.values().of(value)
        if kind.tag not in ("tuple", "list") or kind.items is None or len(kind.items) == 2:
            self._check_structure(d, fwd, node, value, label, error)
            return
        n = len(kind.items)
        advice = ("return `(primal_out, residuals)` with the residuals grouped into one tuple" if n > 2 else
                  "return `(primal_out, residuals)` (use `None` when bwd needs no residuals)")
        self.report(node, f"{label} returns a {n}-element {kind.tag} ({kind.why or self.quote(value)}), not a pair "
                          f"(primal_out, residuals): differentiating `{d.name}` raises {error}; {advice}")


    def _check_structure(self, d: CustomDerivative, fwd: RuleFunction, node: ast.AST, value: ast.expr,
                         label: str, error: str) -> None:
        """A return that evaluates (`vjplint/facts/contract.py`) to one array or a container of
        other than two entries: a call of the primal whose output is one array, a helper's."""
        fn = fwd.called
        assert fn is not None
        s = self.model.facts.structure(d, value, fn, {})
        if s is None:
            self._check_primal_output(d, fwd, node, value, label)
            return
        if s.kind == NONE or s.kind in (TUPLE, LIST) and s.length == 2:
            return
        self.report(node, f"{label} returns `{self.quote(value)}`, which is {s.describe()} ({s.why}), not a pair "
                          f"(primal_out, residuals): differentiating `{d.name}` raises {error}; return "
                          f"`({self.quote(value, 40)}, residuals)` (use `None` for no residuals)")


    def _check_primal_output(self, d: CustomDerivative, fwd: RuleFunction, node: ast.AST, value: ast.expr,
                             label: str) -> None:
        """fwd returns the primal's own output (`vjplint/facts/rule_evidence.py`), whatever its
        structure: JAX reads it as the pair. Not a pair: a TypeError; a pair: its first element
        is taken as the output (a different structure) and the second as residuals, silently."""
        assert fwd.called is not None and fwd.node is not None
        if fwd.bound_keywords:
            return
        why = self.model.facts.returns_primal_output(d, fwd.called, value, fwd.bound_positional)
        if why is None and fwd.registered is not None:
            # the registered fwd only hands its parameters to `fwd.node`: read that body's returns
            for _, inner in self.model.facts.returns_of(fwd.node):
                why = self.model.facts.returns_primal_output(d, fwd.node, inner, fwd.bound_positional) \
                    if inner is not None else None
                if why is not None:
                    why = f"`{self.quote(value, 40)}` returns `{self.quote(inner, 30)}`: {why}"
                    break
        if why is None:
            return
        out = self.quote(value, 40)
        if isinstance(value, ast.Tuple) and not out.startswith("("):
            out = f"({out})"  # `return r, theta`: the output is the whole tuple
        self.report(node, f"{label} returns `{self.quote(value)}`, the primal's own output ({why}), not a pair "
                          f"(primal_out, residuals): JAX reads that value as the pair, so differentiating "
                          f"`{d.name}` raises `TypeError: Custom VJP fwd rule ... must produce a pair` when the "
                          f"output is not a pair, and gives wrong gradients when it is one; return "
                          f"`({out}, residuals)` (use `None` for no residuals)")


def _kind(node: ast.expr) -> str:
    return "list" if isinstance(node, ast.List) else "tuple"
