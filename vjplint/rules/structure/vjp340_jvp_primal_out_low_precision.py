from __future__ import annotations

import ast
import re
from typing import Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import fixed_float_cast, rule_label

# The half-precision dtypes: a tangent computed from float32 inputs is not one of them.
LOW = frozenset({"float16", "bfloat16"})
FWD_ERROR = ("TypeError \"Custom VJP fwd rule ... must produce a pair (list or tuple of length two) where the first element "
             "represents the primal output (equal to the output of the custom_vjp-decorated function ...) ... the fwd rule "
             "output's first element had shapes/dtypes of ...\"")
JAX_ERROR = ("TypeError \"Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
             "dtypes\"")


class JvpPrimalOutLowPrecision(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule that returns a pair `(primal_out, tangent_out)` whose primal
    output is cast to a fixed half-precision dtype at its outermost operation
    (`y.astype(jnp.bfloat16)`, `jnp.asarray(y, jnp.float16)`, `jnp.bfloat16(y)`) while the tangent
    output is not cast to that dtype. A cast to a dtype read from a value (`y.astype(x.dtype)`),
    a cast of both outputs to the same dtype, and a cast nested inside other arithmetic stay
    silent, as do casts to float32/float64 (the usual dtype of the tangent too). Likewise a
    `jax.custom_vjp` fwd that returns its primal output cast to half precision where the
    function itself does not (and does not return fwd's own output).

    ## Why is this bad?
    A jvp rule's tangent output must have the tangent dtype of its primal output. A tangent
    computed from float32 (or any non-half) inputs is not bfloat16, so measured on JAX 0.10.2
    (`fixtures/rules/VJP340/fire_*.py`, census row E08 of `docs/facts/jax-errors.md`) `jax.jvp`,
    `jax.grad` and `jax.jacfwd` raise

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes. Expected bfloat16[3] (tangent type of bfloat16[3]) but got float32[3]

    It runs only when every input is already in that dtype, hence "may". For a fwd, JAX's check
    runs only where the primal is traced as well (`jax.grad(jax.jit(f))`: "the fwd rule output's
    first element had shapes/dtypes of ..."); under plain `grad` the half-precision output flows
    on and the values silently lose precision (heldout3's `fwd_primal_bf16`, labelled on JAX).

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x).astype(jnp.bfloat16), jnp.cos(x) * t
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), jnp.cos(x) * t      # or cast the tangent to bfloat16 too
    ```

    ## Fix safety
    No fix: whether the primal output should keep its dtype or the tangent follow it to half
    precision is the author's choice.
    """

    CODE = "VJP340"
    NAME = "jvp-primal-out-low-precision"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp", b"custom_vjp")
    NEEDS = re.compile("float16")  # float16 and bfloat16, as a string or an attribute
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp", "vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x).astype(jnp.bfloat16), jnp.cos(x) * t
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x).astype(jnp.bfloat16), (jnp.cos(x) * t).astype(jnp.bfloat16)
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.kind == "vjp":
            self._check_fwd(d)
            return
        for reg in d.registrations:
            if reg.method != "defjvp":
                continue
            for rule in reg.rules:
                if rule.node is None or rule.is_none or rule.node in self._done:
                    continue
                self._done.add(rule.node)
                self._check_rule(d, rule)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)
        for _, value in self.model.facts.returns_of(fn):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2 or \
                    any(isinstance(e, (ast.Starred, ast.Tuple, ast.List)) for e in value.elts):
                continue
            primal_expr, tangent_expr = value.elts
            dtype = fixed_float_cast(self.model, primal_expr)
            if dtype not in LOW or fixed_float_cast(self.model, tangent_expr) == dtype:
                continue
            self.report(primal_expr, (
                f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns the primal output "
                f"`{self.quote(primal_expr, 50)}`, cast to {dtype}, with the tangent "
                f"`{self.quote(tangent_expr, 40)}`, not cast to {dtype}: a tangent output must have its primal "
                f"output's dtype, so unless every input of `{d.name}` is already {dtype}, `jax.jvp`/`jax.grad` "
                f"of `{d.name}` may raise {JAX_ERROR}; return the primal output in its own dtype, or cast the "
                f"tangent to {dtype} too"))

    def _check_fwd(self, d: CustomDerivative) -> None:
        """A custom_vjp's fwd returning its primal output cast to half precision where the primal
        function returns its own dtype: the output JAX hands on is the fwd's, in another dtype."""
        fwd = d.rule("fwd")
        if fwd is None or fwd.node is None or fwd.node in self._done or d.primal is None:
            return
        self._done.add(fwd.node)
        own = {fixed_float_cast(self.model, v) for _, v in self.model.facts.returns_of(d.primal) if v is not None}
        calls = {n.func.id for n in self.model.facts.calls_in(d.primal) if isinstance(n.func, ast.Name)}
        if fwd.name in calls:
            return  # the primal returns what fwd does (`return f_fwd(x)[0]`): the dtypes agree
        for _, value in self.model.facts.returns_of(self.model.facts.through_wrapper(fwd.node)):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2:
                continue
            dtype = fixed_float_cast(self.model, value.elts[0])
            if dtype not in LOW or dtype in own:
                continue
            self.report(value.elts[0], (
                f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}` returns the primal output "
                f"`{self.quote(value.elts[0], 50)}`, cast to {dtype}, where `{d.name}` itself returns its own "
                f"dtype: under `jax.grad` the output is the fwd's, so it is silently {dtype} (precision lost), and "
                f"where the primal is traced too (`jax.grad(jax.jit(...))`) JAX raises {FWD_ERROR}; return the "
                f"output in the primal's dtype (cast inside the computation, not the result)"))
