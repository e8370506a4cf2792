from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.contract import Contract
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.syntax.walk import walk

# A parameter named for the tangents in the primals' place, and the reverse (a jvp rule's last two).
TANGENT_WORDS = ("tangents", "tangent", "tans", "dots", "t_in", "tangents_in", "ts", "dxs", "dx", "tx", "tangent_in")
PRIMAL_WORDS = ("primals", "primal", "prims", "args", "xs", "primals_in", "inputs", "x")
# defjvps rules are called (g, ans, *primals): the tangent first, then the output.
OUTPUT_WORDS = ("ans", "out", "output", "result", "primal_out", "y", "res", "value")
GRAD_WORDS = ("g", "t", "tangent", "dot", "x_dot", "g_in", "ct", "ydot", "y_dot", "dy", "t_in", "dans")


class RuleOrderByName(Rule):
    """## What it does
    Compares the names a rule gives to what JAX passes it with the order JAX passes them, and
    warns when the names say the order is another (the model is ErrorProne's argument-selection
    check): a jvp rule unpacking `primals` or `tangents` as a permutation of the primal's
    differentiable parameters (`y_dot, x_dot = tangents` for `f(x, y)`), a bwd returning
    cotangents named for the parameters in a permuted order (`return dy, dx`; `dx`, `x_bar`,
    `ct_x`, `g_x`, `gx`, `grad_x` name `x`'s slot), a jvp rule taking `(tangents, primals)`, and a
    `defjvps` rule taking `(ans, g, ...)`. Where the parameters' names say nothing (`a0`, `a1`),
    the names a rule gives their values decide (`x, y` in the rule's own call `f(x, y)`, or the
    residuals fwd saves and bwd unpacks; a tangent numbered like a primal, `t1` for `x1`), and so
    does how the body uses the parameters: a jvp rule computing the primal output from its
    second parameter (the tangents), a defjvps rule whose result reads its second parameter
    (the output) and never its first (the tangent).
    Names decide most of it, so it says "may": nothing is reported unless at least two named
    slots are misplaced. Also a bwd putting a zero shaped like another differentiable argument
    in a slot (`return jnp.zeros_like(scale), q_g` for `f(out, scale)`) while that argument's
    slot holds something else than None or its own zero.

    ## Why is this bad?
    JAX passes the primals and tangents in the order of the primal's differentiable parameters,
    calls a defjvp rule with `(primals, tangents)` and a defjvps rule with `(g, ans, *primals)`,
    and reads bwd's result by position. A permutation raises only when the shapes differ; with
    equal shapes every derivative is silently wrong.

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        y_dot, x_dot = tangents
        return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
    ```

    ## Fix safety
    No automatic fix: the names may be what is wrong.
    """

    CODE = "VJP334"
    NAME = "rule-order-by-name"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp", b"custom_vjp")
    APIS = frozenset({"jax"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x, y):
    return jnp.sin(x) * y

@f.defjvp
def f_jvp(primals, tangents):
    x, y = primals
    y_dot, x_dot = tangents
    return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x, y):
    return jnp.sin(x) * y

@f.defjvp
def f_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        contract = self.model.facts.contract_of(d)
        if contract is None:
            return
        for reg in d.registrations:
            for index, rule in enumerate(reg.rules):
                fn = rule.node
                if fn is None or rule.is_none or fn in self._done or fn.args.vararg:
                    continue
                self._done.add(fn)
                if reg.method == "defjvp":
                    self._jvp(d, contract, rule)
                elif reg.method == "defjvps":
                    self._defjvps(d, rule)
                elif reg.method == "defvjp" and index == 1:
                    self._bwd(d, contract, rule)

    # -- jvp rules ------------------------------------------------------------------------------
    def _jvp(self, d: CustomDerivative, contract: Contract, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)  # a rule that only returns `_impl(primals, tangents)`
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args][rule.bound_positional:]
        if len(params) < 2:
            return
        primals, tangents = params[-2], params[-1]
        if primals.lower() in TANGENT_WORDS and tangents.lower() in PRIMAL_WORDS:
            self.report(fn.args.args[-2] if len(fn.args.args) >= 2 else fn,
                        f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` may take its parameters in the "
                        f"wrong order: it names them `({primals}, {tangents})`, but JAX calls it with "
                        f"`(primals, tangents)`, so `{primals}` receives the primal values and `{tangents}` the "
                        f"tangents; the tangent output is then wrong (or not linear). Swap the parameters, or "
                        f"rename them if the names are what is wrong")
            return
        call = self.model.facts.primal_call_from_tangents(d, fn, primals, tangents)
        if call is not None:  # names that say nothing: how the body uses the two parameters
            self.report(call,
                        f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` may take its parameters in the "
                        f"wrong order: it computes the primal output `{self.quote(call, 40)}` from `{tangents}`, "
                        f"but JAX calls it with `(primals, tangents)`, so `{tangents}` holds the tangents and "
                        f"`{primals}` the primal values; the primal output and the tangent output are then wrong. "
                        f"Swap the parameters")
            return
        for found in self.model.facts.misordered_jvp_unpackings(d, fn, primals, tangents):
            target, what = found.node.targets[0], found.what
            self.report(target,
                        f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` may unpack its {what} in the "
                        f"wrong order: `{self.quote(target, 40)} = {found.source}` names "
                        f"{_listing(list(found.names), list(found.wrong), contract)}, but JAX passes the {what} in the "
                        f"order of `{d.name}`'s differentiable parameters `({', '.join(contract.diff_names)})`; with "
                        f"equal shapes the derivatives are silently wrong. Unpack them in that order, or rename them "
                        f"if the names are what is wrong")

    def _defjvps(self, d: CustomDerivative, rule: RuleFunction) -> None:
        fn = rule.node
        assert fn is not None
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args][rule.bound_positional:]
        if len(params) < 2:
            return
        first, second = params[0], params[1]
        if first.lower() in OUTPUT_WORDS and second.lower() in GRAD_WORDS:
            self.report(fn.args.args[0] if fn.args.args else fn,
                        f"defjvps rule of {d.label} `{d.name}` may take its parameters in the wrong order: it "
                        f"names them `({first}, {second}, ...)`, but JAX calls each defjvps rule with "
                        f"`(g, ans, *primals)`: the input tangent first, then the output. `{second}` receives the "
                        f"output and `{first}` the tangent; the tangent output is then wrong (or not linear). Swap "
                        f"them, or rename them if the names are what is wrong")
        elif self.model.facts.ignores_first(fn, first, second):
            self.report(fn.args.args[0] if fn.args.args else fn,
                        f"defjvps rule of {d.label} `{d.name}` may take its parameters in the wrong order: its "
                        f"result never reads `{first}`, which JAX passes the input tangent (each defjvps rule is "
                        f"called `(g, ans, *primals)`), but reads `{second}`, the output; a tangent output that "
                        f"ignores the input tangent is not linear in it, so the derivative is wrong. Swap them if "
                        f"`{second}` is meant as the tangent")

    # -- bwd --------------------------------------------------------------------------------------
    def _bwd(self, d: CustomDerivative, contract: Contract, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)
        for node, value in self.model.facts.returns_of(fn):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(contract.diff_names):
                continue
            slots: List[Optional[str]] = []
            for e in value.elts:
                slots.append(None if isinstance(e, ast.Constant) and e.value is None else _cotangent_slot(self.model, e, contract))
            kept = [(i, s) for i, s in enumerate(slots) if not (isinstance(value.elts[i], ast.Constant)
                                                                and value.elts[i].value is None)]
            if self._zeros_elsewhere(d, contract, rule, value, self.model.facts.output_cotangent_names(d, contract, rule, fn)):
                continue
            if len(kept) < 2 or any(s is None for _, s in kept):
                continue
            got = [s for _, s in kept]
            expected = tuple(contract.diff_names[i] for i, _ in kept)
            wrong = self.model.facts.permutation(got, expected)  # type: ignore[arg-type]
            if not wrong:
                continue
            places = ", ".join(f"`{self.quote(value.elts[kept[i][0]], 25)}` (for `{s}`) at position {kept[i][0]}, "
                               f"where JAX reads `{want}`'s" for i, s, want in wrong) + _aliases_shown(contract)
            self.report(value,
                        f"{rule_label(rule, 'bwd')} of {d.label} `{d.name}` may return its cotangents in the wrong "
                        f"order: {places}, but JAX reads bwd's result by position, one entry per differentiable "
                        f"parameter in the order `({', '.join(contract.diff_names)})`; with equal shapes the "
                        f"gradients are silently swapped. Return them in that order, or rename them if the names "
                        f"are what is wrong")


    def _zeros_elsewhere(self, d: CustomDerivative, contract: Contract, rule: RuleFunction, value: ast.expr,
                         cot: Dict[str, str]) -> bool:
        """`return jnp.zeros_like(scale), q_g` for `f(out, scale)`: a zero shaped like another
        differentiable argument in this one's slot, while that argument's slot holds something
        else (not None, not its own zero): the entries may be swapped."""
        elts = value.elts  # type: ignore[attr-defined]
        for i, e in enumerate(elts):
            shaped = self._zeros_of(e, contract, cot)
            if shaped is None or shaped == contract.diff_names[i]:
                continue
            j = contract.diff_names.index(shaped)
            other = elts[j]
            if isinstance(other, ast.Constant) or self._zeros_of(other, contract, cot) is not None:
                continue
            held = e.args[0].id  # type: ignore[attr-defined]
            via = f" (`{held}` is the output cotangent, which JAX passes bwd last, and `{d.name}` returns " \
                f"`{shaped}` itself: if `{held}` was meant to be the residuals, bwd's last two parameters are " \
                f"swapped)" if held in cot else \
                "" if held == shaped else f" (`{held}` holds `{shaped}`'s value: fwd saves it as the residuals)"
            self.report(value,
                        f"{rule_label(rule, 'bwd')} of {d.label} `{d.name}` may return its cotangents in the wrong "
                        f"order: `{self.quote(e, 30)}` at position {i}, where JAX reads `{contract.diff_names[i]}`'s "
                        f"cotangent, is shaped like `{shaped}`{via}, and `{self.quote(other, 30)}` stands in `{shaped}`'s "
                        f"place (position {j}); JAX reads bwd's result by position, one entry per differentiable "
                        f"parameter in the order `({', '.join(contract.diff_names)})`, so the gradients may be "
                        f"swapped (an error only when the shapes differ). Return them in that order, or use "
                        f"`jnp.zeros_like({contract.diff_names[i]})` if the zero is meant for that slot")
            return True
        return False

    def _zeros_of(self, e: ast.expr, contract: Contract, cot: Optional[Dict[str, str]] = None) -> Optional[str]:
        if not (isinstance(e, ast.Call) and e.args and isinstance(e.args[0], ast.Name)):
            return None
        q = self.model.index.qualname(e.func) or ""
        if not (q.rsplit(".", 1)[-1] in ZERO_LIKE and q.startswith(("jax.numpy.", "numpy."))):
            return None
        if cot and e.args[0].id in cot:
            return cot[e.args[0].id]
        if e.args[0].id in contract.diff_names:
            return e.args[0].id
        return dict(contract.aliases).get(e.args[0].id)  # a name the residuals show holds that parameter


ZERO_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like")


def _cotangent_slot(model: FileModel, expr: ast.expr, contract: Contract) -> Optional[str]:
    """The parameter a cotangent entry is named for: the one affixed name it mentions (`dq`,
    `x_bar`, `grad_w`; a bare parameter name says nothing: `cos(x) * y * g` is x's cotangent)."""
    slots = set()
    for n in walk(expr):
        if isinstance(n, ast.Name) and n.id not in contract.params and n.id not in dict(contract.aliases):
            s = model.facts.contract_slot(n.id, contract)
            if s is not None:
                slots.add(s)
    return slots.pop() if len(slots) == 1 else None


def _listing(names: List[Optional[str]], wrong: List[Tuple[int, str, str]], contract: Optional[Contract] = None) -> str:
    return ", ".join(f"`{names[i]}` (for `{got}`) at position {i}, where JAX passes `{want}`'s" for i, got, want in wrong) \
        + (_aliases_shown(contract) if contract is not None else "")


def _aliases_shown(contract: Contract) -> str:
    """How names the primal's parameters do not spell were tied to them (`Contract.aliases`)."""
    if not contract.aliases:
        return ""
    pairs = ", ".join(f"`{name}` holds `{param}`'s value" for name, param in contract.aliases[:4])
    return f" ({pairs}: the primal's calls in the rules, or the residuals fwd saves, show it)"

