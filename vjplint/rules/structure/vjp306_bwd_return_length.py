from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set

from vjplint.diagnostics import Applicability, Severity
from vjplint.facts import plural
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import BWD_TREE, rule_label


class BwdReturnLength(Rule):
    """## What it does
    Counts the cotangents a custom_vjp bwd rule returns: every `return` that is a tuple or list
    literal (or a name assigned once to a tuple literal, or a literal with starred parts whose
    minimum length is already too long) must have exactly D elements, one per differentiable
    positional argument of the primal: all positional parameters (defaults included), minus
    the `nondiff_argnums`/`nondiff_argnames` positions. A helper call or a parameter is
    unknown and stays silent; a list of the right length is legal. When the primal takes
    `*args`, D comes from the call sites (only when they agree and the function cannot be
    called from elsewhere). A comprehension without a condition (`tuple(g * r for r in res)`,
    `[w * g for w in weights]`) has one entry per element of what it iterates: a literal, a
    tuple shown, or bwd's residuals parameter where every fwd returns a residual tuple literal.

    ## Why is this bad?
    JAX matches bwd's output against the tuple of differentiable arguments and fails, under
    grad only, when the lengths differ:

        TypeError: Custom VJP bwd rule must produce an output with the same container
        (pytree) structure as the args tuple of the primal function, and in particular must
        produce a tuple of length equal to the number of arguments to the primal function ...

    The classic slip is a slot for a nondiff argument: bwd returns nothing for those.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def power(n, x):
        return x ** n

    def power_bwd(n, x, g):
        return (None, n * x ** (n - 1) * g)
    ```

    ## Use instead
    ```python
    def power_bwd(n, x, g):
        return (n * x ** (n - 1) * g,)
    ```

    ## Fix safety
    Only the unambiguous case is fixed: a literal that has one slot per positional argument,
    holding `None` at every nondiff position. Those `None`s are removed (safe: the code could
    not run before, and the other elements keep their order). No fix is offered for other
    lengths: which cotangent is missing or extra is for the author to decide.
    """

    CODE = "VJP306"
    NAME = "bwd-return-length"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    FIX = "remove the nondiff slots"

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y, A):
    return A @ (x * y)

def f_fwd(x, y, A):
    return A @ (x * y), (x, y, A)

def f_bwd(res, g):
    x, y, A = res
    gxy = A.T @ g
    return gxy * y, gxy * x
f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y):
    return x * y

def f_fwd(x, y):
    return x * y, (x, y)

def f_bwd(res, g):
    x, y = res
    return [g * y, g * x]

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        names = self.model.facts.differentiable_names(d)
        if names is None:
            return
        for _, _, bwd in self.model.facts.checked_vjp_rules(d):
            if bwd is None or bwd.node is None:
                continue
            for _, value in self.model.facts.returns_of(bwd.node):
                for candidate in self.model.facts.return_branches(value):
                    if candidate not in self._seen and self._check_return(d, bwd, candidate, names):
                        self._seen.add(candidate)  # a bwd shared by several functions: report a return once

    def _check_return(self, d: CustomDerivative, bwd: RuleFunction, value: ast.expr, names: List[str]) -> bool:
        assert bwd.node is not None
        length = self.model.facts.sequence_length(value, bwd.node)
        inferred = ""
        if length is None:
            kind = self.model.facts.values().of(value)
            if kind.tag in ("tuple", "list") and kind.items is not None and not isinstance(value, (ast.Tuple, ast.List)):
                length = (len(kind.items), True, value)  # through a helper or a variable: the inferred value
                inferred = f" ({kind.why or self.quote(value)}, a {len(kind.items)}-element {kind.tag})"
            elif isinstance(value, (ast.Call, ast.ListComp)) and d.api == "jax":
                # `tuple(g * r for r in res)`: as many entries as the residuals fwd saves (or another sequence shown)
                env = self.model.facts.rule_environment(d, bwd.node, "bwd", bwd.bound_positional)
                made = self.model.facts.structure(d, value, bwd.node, env)
                if made is None or made.kind not in ("tuple", "list"):
                    return False
                length, inferred = (made.length, True, value), f" ({made.why})"
            else:
                return False
        n, exact, literal = length
        D = len(names)
        if n == D and exact or not exact and n <= D:
            return False
        count = f"{n}" if exact else f"at least {n}"
        nondiff = self.model.facts.nondiff_positions(d) or ()
        k = self.model.facts.primal_arg_count(d)
        shown = inferred or ("" if literal is value else f" (`{self.quote(value)}` is a {n}-element tuple)")
        whose = "" if d.api == "jax" else f" of {d.label} `{d.name}`"
        message = (f"{rule_label(bwd, 'bwd')}{whose} returns {count} cotangent{'s' if n != 1 else ''}{shown} but `{d.name}` "
                   f"has {plural(D, 'differentiable argument')} ({', '.join(names)})")
        if d.api == "linen" and names:
            message += f" (linen's first entry is the tangent of the `grad_vars` collections, in `{names[0]}`'s place)"
        fix = None
        sig = self.model.facts.primal_signature(d)
        defaulted = [p for p in (sig.positional[len(sig.positional) - sig.n_defaults:] if sig else []) if p in names]
        if defaulted and n < D:
            listed = ", ".join(f"`{p}`" for p in defaulted)
            if len(defaulted) == 1:
                message += f" ({listed} has a default, but JAX fills it in: it needs a cotangent or None)"
            else:
                message += f" ({listed} have defaults, but JAX fills them in: they need cotangents or None)"
        if nondiff and exact and n == k:
            assert sig is not None
            slots = ", ".join(f"`{sig.positional[i]}` (position {i})" for i in nondiff)
            message += (f": it counted a slot for the nondiff argument{'s' if len(nondiff) > 1 else ''} {slots}, "
                        f"and bwd returns nothing for nondiff arguments")
            if literal is value and not inferred:
                fix = self._remove_slots(literal, nondiff)
        message += (f"; differentiating `{d.name}` raises {self.model.facts.bwd_structure_error(d, BWD_TREE)}; return one cotangent (or None) per "
                    f"differentiable argument, in order")
        unpacked = self._unpacked_in_primal(d, names[0]) if D == 1 and n > 1 and exact and d.api == "jax" else None
        if unpacked is not None:
            message += (f" (`{names[0]}` is one pytree argument, unpacked as `{self.quote(unpacked, 40)}`: its "
                        f"cotangent is one element with its structure, `(({', '.join(f'd_{i}' for i in range(n))}),)`)")
        if fix is not None:
            self.report(literal.elts[0], message, end_node=literal.elts[-1],  # type: ignore
                        fix=self.replacing(literal.elts[0], fix, Applicability.SAFE,  # type: ignore
                                           "Remove the `None` slots of the nondiff arguments",
                                           end_node=literal.elts[-1]))  # type: ignore
        else:
            self.report(value, message)
        return True

    def _unpacked_in_primal(self, d: CustomDerivative, name: str) -> Optional[ast.AST]:
        """Where the primal unpacks or indexes its single argument (`w, b = params`, `params[0]`)."""
        if d.primal is None:
            return None
        for node in self.model.facts.own_nodes(d.primal):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], (ast.Tuple, ast.List)) and \
                    isinstance(node.value, ast.Name) and node.value.id == name:
                return node
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name and \
                    isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                return node
        return None

    def _remove_slots(self, literal: ast.expr, positions: Sequence[int]) -> Optional[str]:
        """The literal's elements without the `None`s at `positions`, layout kept; None if ambiguous."""
        elts = literal.elts  # type: ignore[attr-defined]
        if any(isinstance(e, ast.Starred) for e in elts):
            return None
        if not all(isinstance(elts[i], ast.Constant) and elts[i].value is None for i in positions):
            return None
        kept = [i for i in range(len(elts)) if i not in positions]
        if not kept or "#" in self.model.source_text(elts[0], elts[-1]):
            return None  # a comment could be lost: leave it to the author
        pieces: List[str] = []
        for j, i in enumerate(kept):
            pieces.append(self.model.source_text(elts[i]))
            if j < len(kept) - 1:
                nxt = i + 1  # keep the separator that followed this element
                pieces.append(self.model.text_between(elts[i], elts[nxt]) if nxt < len(elts) else ", ")
        text = "".join(pieces)
        if len(kept) == 1 and isinstance(literal, ast.Tuple) and not _comma_follows(self.model, elts[-1]):
            text += ","
        return text


def _comma_follows(model, node: ast.AST) -> bool:
    line = model.lines[node.end_lineno - 1].encode("utf-8")  # type: ignore[attr-defined]
    rest = line[node.end_col_offset:].lstrip()  # type: ignore[attr-defined]
    return rest.startswith(b",")
