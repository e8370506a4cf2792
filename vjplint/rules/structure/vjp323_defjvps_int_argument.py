from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from vjplint.diagnostics import Applicability, Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.model.semantic import walk


class DefjvpsIntArgument(Rule):
    """## What it does
    Flags a `defjvps` tangent rule that computes with its tangent when a call in the module passes
    a Python int (or an int-typed scalar) in that argument's position: `f(3, x)`, `jax.vjp(f, 1, x)`,
    `jax.grad(f, 1)(3, x)`.

    ## Why is this bad?
    An integer argument has no tangent space: JAX hands its rule a `float0` zero, and any
    arithmetic on it fails. Measured on JAX 0.10.2 (docs/facts/structure.md): with `f(1, b)`, the
    eager call works, but `grad` with respect to `b`, `jax.vjp` and `jax.jvp` raise

        UFuncTypeError: ufunc 'multiply' did not contain a loop with signature matching types
        (dtype([('float0', 'V')]), dtype('float64')) -> None

    (under jit: `TypeError: Called multiply with a float0 array ...`; returning the tangent as it
    is: `AssertionError`) — jax-ml/jax#7098. A `None` rule, or a rule that does not read its
    tangent, works. The rule warns ("may"): the call may never be differentiated.

    ## Example
    ```python
    @jax.custom_jvp
    def scale(n, x):
        return n * x

    scale.defjvps(lambda n_dot, out, n, x: n_dot * x, lambda x_dot, out, n, x: n * x_dot)
    y = jax.grad(lambda x: scale(3, x))(2.0)
    ```

    ## Use instead
    ```python
    scale.defjvps(None, lambda x_dot, out, n, x: n * x_dot)
    ```
    or mark `n` in `nondiff_argnums` and register with `defjvp`.

    ## Fix safety
    Unsafe: the fix writes `None` for that argument's rule, which is right for the int calls but
    drops the derivative where other callers pass a float.
    """

    CODE = "VJP323"
    NAME = "defjvps-int-argument"
    SEVERITY = Severity.WARNING
    FIX = "use None for the int argument's rule"
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax

@jax.custom_jvp
def scale(n, x):
    return n * x

scale.defjvps(lambda n_dot, out, n, x: n_dot * x, lambda x_dot, out, n, x: n * x_dot)

def loss(x):
    return scale(3, x)
''']
    VALID = ['''
import jax

@jax.custom_jvp
def scale(n, x):
    return n * x

scale.defjvps(None, lambda x_dot, out, n, x: n * x_dot)

def loss(x):
    return scale(3, x)
''']

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.nondiff or d.signature is None or d.signature.vararg:
            return
        for reg in self.model.facts.own_registrations(d):
            if reg.method != "defjvps" or reg.as_decorator or not self.model.facts.registered_here(d, reg.node):
                continue
            self._current = d
            ints = self._int_arguments(d)
            for i, rule in enumerate(reg.rules):
                if i >= len(d.signature.positional) or rule.is_none or rule.node is None:
                    continue
                found = next(((call, arg) for pos, call, arg in ints if pos == i), None)
                use = self._tangent_use(rule)
                if found is None or use is None:
                    continue
                call, arg = found
                name = d.signature.positional[i]
                fix = self.replacing(rule.expr, "None", Applicability.UNSAFE,
                                     f"Use `None` as `{name}`'s tangent rule (an int has no tangent)")
                self.report(rule.expr, fix=fix, message=f"`{d.name}` is called with the int `{self.quote(arg, 20)}` for `{name}` "
                                       f"(line {call.lineno}), and the defjvps rule for `{name}` computes with "
                                       f"its tangent (`{self.quote(use, 40)}`): an int argument's tangent is a "
                                       f"float0 zero, so differentiating that call may raise `TypeError: Called "
                                       f"multiply with a float0 array ...` (`UFuncTypeError: ufunc 'multiply' did "
                                       f"not contain a loop ...` with Python scalars); use `None` as `{name}`'s "
                                       f"rule, or pass a float")

    def _int_arguments(self, d: CustomDerivative) -> List[Tuple[int, ast.Call, ast.expr]]:
        """(position, call, argument) for every int passed to `d` in the module (a name defined more
        than once: the calls between this definition and the next)."""
        out: List[Tuple[int, ast.Call, ast.expr]] = []
        facts = self.model.facts

        def is_d(expr: ast.expr) -> bool:
            found = facts.derivative_named(expr)
            return found is not None and found.name == d.name and isinstance(expr, ast.Name) and expr.id == d.name

        for call in facts.name_calls():
            if is_d(call.func):
                out.extend(self._ints(call, call.args, call))
        for call in facts.transform_calls():
            if self.model.index.qualname(call.func) == "jax.vjp" and is_d(call.args[0]):
                out.extend(self._ints(call, call.args[1:], call))
        for call in self.model.index.of_type(ast.Call):  # `jax.grad(f, 1)(3, x)`
            inner = call.func  # type: ignore[attr-defined]
            if isinstance(inner, ast.Call) and inner.args and self.model.index.qualname(inner.func) in (
                    "jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.jacfwd") and is_d(inner.args[0]):
                out.extend(self._ints(call, call.args, call))  # type: ignore[arg-type]
        return out

    def _ints(self, call: ast.Call, args: List[ast.expr], where: ast.Call) -> List[Tuple[int, ast.Call, ast.expr]]:
        found: List[Tuple[int, ast.Call, ast.expr]] = []
        if not self.model.facts.registered_here(self._current, where):
            return found  # a call of another definition of the same name
        for i, arg in enumerate(args):
            if isinstance(arg, ast.Starred):
                break
            kind = self.model.facts.values().of(arg)
            if kind.tag == "scalar" and kind.dtype == "int":
                found.append((i, where, arg))
        return found

    @staticmethod
    def _tangent_use(rule: RuleFunction) -> Optional[ast.AST]:
        """The first expression of the rule that reads its tangent parameter."""
        assert rule.node is not None
        params = rule.signature.positional[rule.bound_positional:]  # type: ignore[union-attr]
        if not params:
            return None
        tangent = params[0]
        body = [rule.node.body] if isinstance(rule.node, ast.Lambda) else rule.node.body
        reads: Set[ast.AST] = set()
        for stmt in body:
            for node in walk(stmt):
                if isinstance(node, ast.Name) and node.id == tangent and isinstance(node.ctx, ast.Load):
                    reads.add(node)
        if not reads:
            return None
        return rule.node.body if isinstance(rule.node, ast.Lambda) else next(
            (n for s in body for n in walk(s) if n in reads), None)
