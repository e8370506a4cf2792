from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.integers import IntArray
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._tangent_messages import float_tangent_message
from vjplint.rules.structure._jvp_unpacking import float_tangent, is_rule_primal, literal_elements, reads_name, rule_unpacking

CUSTOM_JVP_ERROR = ("`TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes "
                    "and dtypes ... primal int32[] with tangent int32[], expecting tangent float0[]`")
JVP_ERROR = ("`TypeError: primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case of "
             "int/bool primal dtype the tangent dtype must be float0 ...`")
FLOAT0 = "np.zeros(np.shape({0}), dtype=jax.dtypes.float0)"


class IntTangentNotFloat0(Rule):
    """## What it does
    Flags a tangent built as an integer array (`jnp.zeros_like(n)`, `jnp.ones_like(n)`,
    `jnp.zeros(shape, jnp.int32)`, ...) for a value the code shows to be an integer or a boolean
    (`jnp.int32(0)`, `.astype(jnp.int32)`, `dtype=jnp.int32`, `jnp.argmax`, `jnp.arange` of int
    literals, `lax.iota` with an int dtype, an integer literal, a comparison, an `int` annotation,
    arithmetic and loop counters of those, what a function of the module returns there), where it
    is either returned by a custom_jvp rule as the tangent of that integer primal output, or
    passed to `jax.jvp` as the tangent of that integer primal. A primal of the rule counts as an
    integer when the custom_jvp's parameter is annotated `int`; when only a call of the module
    passes an integer there, the finding is a warning ("may": that call may not be
    differentiated). Inside a custom_jvp rule, a `zeros_like(p)` handed to `jax.jvp` for a
    primal `p` whose own tangent the rule throws away (`x_dot, _ = tangents`) is a warning even
    when `p`'s dtype is not shown: dropping JAX's tangent for an argument is what a rule does when
    the argument is an integer; it stays silent when a call passes a float there or the parameter
    is annotated `float`. A value whose dtype the code does not show stays silent, as do float0
    tangents, symbolic zeros and float tangents of float outputs; a float tangent shown as one
    (`jnp.zeros(shape)` without a dtype, a float `dtype=`) for an integer output is flagged too. The rule runs in modules that
    mention `custom_jvp` or `defjvp` (the prefilter), so a `jax.jvp` elsewhere is not read.

    ## Why is this bad?
    JAX gives integer and boolean values a `float0` tangent, and rejects an integer array in its
    place. Measured on JAX 0.10.2 (docs/facts/scripts/int_tangent_float0.py; patrick-kidger/diffrax#508,
    jax-ml/jax#4433): a custom_jvp rule returning `jnp.zeros_like(n)` (or `ones_like`, an int32
    `jnp.zeros`, or even a float32 zero) for an int32 or bool output makes `grad`, `jvp` and
    `jit(grad)` raise

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes, but got: primal int32[] with tangent int32[], expecting tangent float0[]

    even when only the float output is differentiated; and `jax.jvp(f, (x, n), (x_dot,
    jnp.zeros_like(n)))` with an int32 `n` raises

        TypeError: primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or
        in case of int/bool primal dtype the tangent dtype must be float0.

    `np.zeros(np.shape(n), dtype=jax.dtypes.float0)` (or `jnp.zeros(..., dtype=jax.dtypes.float0)`)
    works in both places, as does passing the rule's own tangent for `n` (JAX makes it float0) and
    a `SymbolicZero` with `symbolic_zeros=True`.

    ## Example
    ```python
    @jax.custom_jvp
    def sqrt_with_steps(a):
        steps = jnp.int32(0)
        ...
        return x, steps

    @sqrt_with_steps.defjvp
    def _jvp(primals, tangents):
        (a,), (a_dot,) = primals, tangents
        root, steps = sqrt_with_steps(a)
        return (root, steps), (a_dot / (2.0 * root), jnp.zeros_like(steps))
    ```

    ## Use instead
    ```python
        return (root, steps), (a_dot / (2.0 * root), np.zeros(np.shape(steps), dtype=jax.dtypes.float0))
    ```

    ## Fix safety
    No fix: whether `numpy` is imported, and whether the value is always an integer, is the
    author's to say.
    """

    CODE = "VJP329"
    NAME = "int-tangent-not-float0"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp", b"defjvp")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def with_index(x):
    return jnp.sin(x), jnp.argmax(x)

@with_index.defjvp
def with_index_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y, i = with_index(x)
    return (y, i), (jnp.cos(x) * t, jnp.zeros_like(i))
''']
    VALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_jvp
def with_index(x):
    return jnp.sin(x), jnp.argmax(x)

@with_index.defjvp
def with_index_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y, i = with_index(x)
    return (y, i), (jnp.cos(x) * t, np.zeros(np.shape(i), dtype=jax.dtypes.float0))
''']

    def check(self) -> None:
        self._reported: Set[ast.AST] = set()
        rules: Dict[ast.AST, Tuple[CustomDerivative, RuleFunction]] = {}
        for d in self.model.derivatives:
            if d.api != "jax" or d.kind != "jvp":
                continue
            for reg, rule in self.model.facts.jvp_rules(d):
                if rule.node is None or rule.node in rules or not self.model.facts.registered_here(d, reg.node):
                    continue
                rules[rule.node] = (d, rule)
                self._check_returns(d, rule)
        for call in self.model.index.of_type(ast.Call):
            assert isinstance(call, ast.Call)
            if self.model.index.qualname(call.func) == "jax.jvp" and len(call.args) >= 3:
                self._check_jvp_call(call, rules)

    # -- a rule's tangent output --------------------------------------------------------------
    def _check_returns(self, d: CustomDerivative, rule: RuleFunction) -> None:
        assert rule.node is not None
        ints = self.model.facts.integers()
        for _, value in self.model.facts.returns_of(rule.node):
            if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != 2:
                continue
            primal_out, tangent_out = value.elts
            pairs = [(t, [i]) for i, t in enumerate(tangent_out.elts)] if isinstance(tangent_out, (ast.Tuple, ast.List)) \
                else [(tangent_out, [])]
            for tangent, path in pairs:
                built = ints.int_tangent(tangent)
                if built is None and (floated := float_tangent(self.model, tangent)) is None:
                    continue
                primal_why = ints.element(primal_out, path)
                if primal_why is None or primal_why == "pending":
                    continue
                text = self._primal_text(primal_out, path)
                element = primal_out.elts[path[0]] if path and isinstance(primal_out, (ast.Tuple, ast.List)) \
                    and path[0] < len(primal_out.elts) else (primal_out if not path else None)
                if built is None:  # a float tangent for an integer output: rejected as an integer one is
                    self._report(tangent, float_tangent_message(self, d, rule, tangent, floated, text, self.model.facts.shown(
                        primal_why), self._name_for(primal_out, path, None), self.model.facts.from_caller(primal_why)),
                        Severity.WARNING if self.model.facts.from_caller(primal_why) else None)
                    continue
                maybe = self.model.facts.from_caller(primal_why) or self.model.facts.from_caller(built.why)
                self._report(tangent, (
                    f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns `{self.quote(tangent, 40)}` as "
                    f"the tangent of the integer output {text} ({self.model.facts.shown(primal_why)}); "
                    f"{self._builder(tangent, built, element, primal_why)}, but JAX gives an integer or boolean "
                    f"output a float0 tangent, so differentiating `{d.name}` (grad, jvp, jit(grad)), even with "
                    f"respect to its float outputs only, {'may raise' if maybe else 'raises'} {CUSTOM_JVP_ERROR}; return "
                    f"`{FLOAT0.format(self._name_for(primal_out, path, built))}` instead (a float zero is rejected "
                    f"too)"),
                    Severity.WARNING if maybe else None)

    def _primal_text(self, primal_out: ast.expr, path: List[int]) -> str:
        if path and isinstance(primal_out, (ast.Tuple, ast.List)) and path[0] < len(primal_out.elts):
            return f"`{self.quote(primal_out.elts[path[0]], 30)}`"
        where = "".join(f"[{i}]" for i in path)
        return f"`{self.quote(primal_out, 30)}`{where}"

    def _name_for(self, primal_out: ast.expr, path: List[int], built: Optional[IntArray]) -> str:
        if built is not None and built.source is not None:
            return self.quote(built.source, 30)
        if path and isinstance(primal_out, (ast.Tuple, ast.List)) and path[0] < len(primal_out.elts):
            return self.quote(primal_out.elts[path[0]], 30)
        return self.quote(primal_out, 30) + "".join(f"[{i}]" for i in path)

    def _builder(self, tangent: ast.expr, built: IntArray, primal: Optional[ast.expr], primal_why: str = "") -> str:
        """Why the tangent is an integer array, the primal's evidence not repeated."""
        quoted = self.quote(built.call, 40)
        where = "" if quoted == self.quote(tangent, 40) else f"it is `{quoted}` (line {built.call.lineno}), and "
        if built.dtype is not None:
            return f"{where}its dtype is {built.dtype}"
        assert built.source is not None
        source = self.quote(built.source, 30)
        if primal is not None and source == self.quote(primal, 30) or f"`{source}`" in primal_why:
            return f"{where}it keeps `{source}`'s integer dtype"
        return f"{where}it keeps the integer dtype of `{source}` ({self.model.facts.shown(built.why)})"

    # -- jax.jvp --------------------------------------------------------------------------------
    def _check_jvp_call(self, call: ast.Call, rules: Dict[ast.AST, Tuple[CustomDerivative, RuleFunction]]) -> None:
        ints = self.model.facts.integers()
        primals, tangents = call.args[1], call.args[2]
        elements = literal_elements(self.model, tangents)
        if elements is None:
            return
        enclosing = self._enclosing_rule(call, rules)
        for i, tangent in enumerate(elements):
            built = ints.int_tangent(tangent)
            primal = literal_elements(self.model, primals)
            primal_expr = primal[i] if primal is not None and i < len(primal) else None
            if built is not None:
                primal_why = ints.element(primals, [i])
                if primal_why is not None and primal_why != "pending":
                    name = self.quote(primal_expr, 30) if primal_expr is not None else f"{self.quote(primals, 30)}[{i}]"
                    maybe = self.model.facts.from_caller(primal_why) or self.model.facts.from_caller(built.why)
                    own = enclosing is not None and is_rule_primal(primal_expr, *enclosing)
                    also = " or the rule's own tangent for it, which JAX already makes float0" if own else ""
                    self._report(tangent, (
                        f"`jax.jvp` receives `{self.quote(tangent, 40)}` as the tangent of the integer primal `{name}` "
                        f"({self.model.facts.shown(primal_why)}); {self._builder(tangent, built, primal_expr, primal_why)}, but an "
                        f"integer or boolean primal needs a float0 tangent, so this call "
                        f"{'may raise' if maybe else 'raises'} {JVP_ERROR}; pass `{FLOAT0.format(name)}`{also}"),
                        Severity.WARNING if maybe else None)
                    continue
            if enclosing is not None and isinstance(primal_expr, ast.Name):
                self._check_dropped(call, tangent, primal_expr, *enclosing)

    def _enclosing_rule(self, call: ast.Call, rules: Dict[ast.AST, Tuple[CustomDerivative, RuleFunction]]
                        ) -> Optional[Tuple[CustomDerivative, RuleFunction]]:
        fn = self.model.index.enclosing_function(call)
        return rules.get(fn) if fn is not None else None

    def _check_dropped(self, call: ast.Call, tangent: ast.expr, primal: ast.Name, d: CustomDerivative,
                       rule: RuleFunction) -> None:
        """`jax.jvp(g, (x, n), (x_dot, jnp.zeros_like(n)))` in a rule that drops JAX's tangent for `n`."""
        if not isinstance(tangent, ast.Call) or not tangent.args or tangent.keywords:
            return
        q = self.model.index.qualname(tangent.func) or ""
        if q not in ("jax.numpy.zeros_like", "numpy.zeros_like") or not (
                isinstance(tangent.args[0], ast.Name) and tangent.args[0].id == primal.id):
            return
        assert rule.node is not None
        unpacked = rule_unpacking(d, rule)
        if unpacked is None:
            return
        primal_names, tangent_names, statement = unpacked
        if primal.id not in primal_names:
            return
        k = primal_names.index(primal.id)
        if k >= len(tangent_names):
            return
        dropped = tangent_names[k]
        if dropped is None or reads_name(rule.node, dropped) or self._float_passed(d, k):
            return
        self._report(tangent, (
            f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` drops JAX's tangent for `{primal.id}` "
            f"(`{self.quote(statement, 50)}`) and passes `{self.quote(tangent, 40)}` to `jax.jvp` in its place: "
            f"a rule drops an argument's tangent when the argument is an integer, and then `zeros_like` gives an "
            f"integer tangent where `jax.jvp` requires float0, so differentiating `{d.name}` may raise {JVP_ERROR}; "
            f"pass the rule's own tangent for `{primal.id}` (JAX makes it float0 for an integer), or "
            f"`{FLOAT0.format(primal.id)}` when `{primal.id}` is always an integer"), severity=Severity.WARNING)

    def _float_passed(self, d: CustomDerivative, k: int) -> bool:
        """Whether a call of `d` in the module passes a float as its differentiable argument `k`,
        or the primal annotates it `float`: the rule then means to hold a float fixed."""
        sig = d.signature
        if sig is None:
            return False
        diff = [i for i in range(len(sig.positional)) if i not in d.nondiff]
        if k >= len(diff):
            return False
        position = diff[k]
        annotation = sig.annotations.get(sig.positional[position])
        if annotation is not None and self.quote(annotation, 20) in ("float", "jnp.float32", "Float"):
            return True
        values = self.model.facts.values()
        argument_lists: List[List[ast.expr]] = [
            call.args for call in self.model.facts.name_calls()
            if call.func.id == d.name and self.model.facts.derivative_named(call.func) is d]  # type: ignore
        for call in self.model.facts.transform_calls():  # `jax.jvp(f, (x, 2.0), ...)`, `jax.vjp(f, x, 2.0)`
            q = self.model.index.qualname(call.func)
            if q in ("jax.jvp", "jax.vjp", "jax.linearize") and self.model.facts.derivative_named(call.args[0]) is d:
                if q == "jax.jvp" and len(call.args) > 1:
                    argument_lists.append(literal_elements(self.model, call.args[1]) or [])
                elif q != "jax.jvp":
                    argument_lists.append(call.args[1:])
        for args in argument_lists:
            if position < len(args) and not any(isinstance(a, ast.Starred) for a in args[:position + 1]):
                if values.of(args[position]).dtype == "float":
                    return True
        return False


    def _report(self, node: ast.expr, message: str, severity: Optional[Severity] = None) -> None:
        if node in self._reported:
            return
        self._reported.add(node)
        if severity is None:
            self.report(node, message)
        else:
            self.report(node, message, severity=severity)
