"""Host callbacks under differentiation (census row E33): where a differentiation of the module
(`jax.grad`, `jax.value_and_grad`, `jax.jacrev`, `jax.jacfwd`, `jax.hessian`, `jax.jvp`, `jax.vjp`,
`jax.linearize`, equinox's and nnx's versions) pushes a tangent into an operand of a
`jax.pure_callback` or an `io_callback` that no custom rule wraps. A callback has no derivative
rule: JAX 0.10.2 raises `ValueError: Pure callbacks do not support JVP. Please use `jax.custom_jvp`
to use callbacks while taking gradients.` (`IO callbacks do not support JVP.` for io_callback) as
soon as a tangent reaches an operand, whether or not the callback's result reaches the output
(measured: docs/facts/jax-errors.md, "Host callbacks under differentiation (e33)").

The differentiated function is followed as forward mode is followed to a custom_vjp
(`vjplint.facts.forward.ForwardMode`: lambdas, helpers, `functools.partial`, methods, static
methods, instances, `lax.scan`/`fori_loop`/`cond`/`tree_map` bodies, parameters passed in) with
"a custom derivative's call" replaced by "a host callback's call": a call of a custom_vjp or
custom_jvp is never entered (its rules give the derivative, the right fix), nor an operand under
`lax.stop_gradient`, an integer or boolean operand (its tangent is a symbolic zero), or a value
the differentiated arguments do not reach."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional, Sequence, Set, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.jaxapi import PARTIAL
from vjplint.model.semantic import FunctionNode
from vjplint.facts.forward import Caller, CallsLibrary, ForwardMode, Library, Step
from vjplint.facts.registry import query

# The host callbacks with no derivative rule, by qualname: the kind JAX names in its message.
HOST_CALLBACKS = {
    "jax.pure_callback": "Pure", "jax._src.callback.pure_callback": "Pure",
    "jax.experimental.pure_callback": "Pure",
    "jax.experimental.io_callback": "IO", "jax._src.callback.io_callback": "IO", "jax.io_callback": "IO",
}
# Keywords of a callback that are no operands.
SETTINGS = frozenset({"callback", "result_shape_dtypes", "sharding", "vmap_method", "vectorized", "ordered"})
# Differentiations whose first argument is the function and whose `argnums` (default 0) picks the
# perturbed positions, and those that perturb every position (`jax.jvp(f, primals, tangents)`).
BY_ARGNUMS = ("jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.jacfwd", "jax.hessian",
              "jax._src.api.grad", "jax._src.api.value_and_grad", "jax._src.api.jacrev", "jax._src.api.jacfwd",
              "jax._src.api.hessian", "flax.nnx.grad", "flax.nnx.value_and_grad",
              "equinox.filter_grad", "equinox.filter_value_and_grad")
# jnp/lax functions whose derivative JAX defines as zero (a symbolic zero tangent): a callback's
# operand made by one receives no tangent (measured: `jnp.floor`, `round`, `rint`, `sign`, `ceil`,
# `trunc`, `isnan`, a comparison, `argsort`, an int cast run under `jax.grad`; `jnp.sum` raises).
ZERO_DERIVATIVE = frozenset({
    "argmax", "argmin", "argsort", "round", "rint", "floor", "ceil", "trunc", "fix", "sign", "equal", "not_equal",
    "greater", "greater_equal", "less", "less_equal", "isnan", "isinf", "isfinite", "nonzero", "searchsorted",
    "digitize", "bincount", "zeros_like", "ones_like", "full_like", "empty_like", "shape", "ndim", "size",
    "stop_gradient", "logical_and", "logical_or", "logical_not", "floor_divide",
})
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.")
EVERY_POSITION = ("jax.jvp", "jax.vjp", "jax.linearize", "jax._src.api.jvp", "jax._src.api.vjp",
                  "jax._src.api.linearize", "equinox.filter_jvp", "equinox.filter_vjp")


@dataclass(eq=False)
class CallbackDifferentiated:
    """`transform` (its short name `how`) differentiates `target`, and `step` (ending in a
    `CallsLibrary` whose `library.qualname` is the callback's) says how a tangent reaches the
    callback's operand."""

    transform: ast.Call
    how: str
    target: ast.expr
    step: Step
    kind: str  # "Pure" or "IO": the words of JAX's message


class HostCallbackReach(ForwardMode):
    """ForwardMode whose end is a host callback's call with a perturbed operand."""

    def __init__(self, model: FileModel) -> None:
        super().__init__(model, "callback")  # no custom derivative is of this kind: none is an end

    def calls_vjp(self, fn: FunctionNode, argnums: Optional[Tuple[int, ...]], skip: int,
                  bound: Sequence[str], depth: int = 0, caller: Optional[Caller] = None,
                  closed: Set[str] = frozenset()) -> Optional[Step]:  # type: ignore[assignment]
        """As ForwardMode's, but never into the primal of a custom derivative (a def a factory's
        `@jax.custom_vjp` makes, reached through the decorator that returns it): its rules give
        the derivative, and JAX never differentiates its body."""
        if self.model.derivative_for_node(fn) is not None:
            return None
        return super().calls_vjp(fn, argnums, skip, bound, depth, caller, closed)

    def _depends_on(self, expr: ast.expr, fn: FunctionNode, perturbed: Set[str], depth: int = 0) -> bool:
        """As ForwardMode's, but a value whose tangent JAX makes a symbolic zero carries none: an
        integer or boolean value (`argmax`, a comparison, an int cast) or the result of a function
        of zero derivative (`jnp.floor(x)`), also through a name bound to one."""
        if isinstance(expr, ast.Compare) or self.model.facts.integers().evidence(expr) is not None:
            return False
        if isinstance(expr, ast.Call):
            q = self.model.index.qualname(expr.func) or ""
            if q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in ZERO_DERIVATIVE:
                return False
        return super()._depends_on(expr, fn, perturbed, depth)

    def callback_of(self, node: ast.Call) -> Optional[Tuple[str, int]]:
        """(qualname, positions fixed by a `functools.partial` alias) when `node` calls a host callback."""
        func = node.func
        bound = self._bound_call(func)  # `host = functools.partial(jax.pure_callback, vmap_method=...)`
        fixed = 0
        if bound is not None and bound.args and self.model.index.qualname(bound.func) in PARTIAL:
            func, fixed = bound.args[0], len(bound.args) - 1
        q = self.model.index.qualname(func) or ""
        return (q, fixed) if q in HOST_CALLBACKS else None

    def _calls_library(self, fn: FunctionNode, perturbed: Set[str], caller: Caller) -> Optional[Step]:
        for node in self.model.facts.own_of_types(fn, (ast.Call,)):
            found = self.callback_of(node)  # type: ignore[arg-type]
            if found is None:
                continue
            q, fixed = found
            operands: List[ast.expr] = list(node.args[max(0, 2 - fixed):])  # type: ignore[attr-defined]
            operands += [k.value for k in node.keywords if k.arg not in SETTINGS]  # type: ignore[attr-defined]
            for operand in operands:
                value = operand.value if isinstance(operand, ast.Starred) else operand
                if self._carries(value, fn, perturbed):  # an integer, boolean or zero-derivative one carries none
                    return CallsLibrary(caller, node, value, Library(q))  # type: ignore[arg-type]
        return None


@query
def callbacks_differentiated(model) -> Tuple[CallbackDifferentiated, ...]:
    """Every differentiation of the module that pushes a tangent into a host callback's operand
    (see the module's docstring), once per differentiating call."""
    reach = HostCallbackReach(model)
    found: List[CallbackDifferentiated] = []
    for node in model.facts.calls_in(model.module):
        q = model.index.qualname(node.func) or ""
        if not node.args or q not in BY_ARGNUMS and q not in EVERY_POSITION or model.facts.expects_failure(node):
            continue
        argnums = reach.argnums(node) if q in BY_ARGNUMS else None
        if q.startswith("equinox.filter_") and q in BY_ARGNUMS:
            argnums = (0,)  # the first argument's arrays
        step = reach.reach(node.args[0], argnums)
        if step is None:
            continue
        end: Optional[Step] = step
        while end is not None and not isinstance(end, CallsLibrary):
            end = getattr(end, "inner", None)
        if end is None:
            continue
        found.append(CallbackDifferentiated(node, q.rsplit(".", 1)[1], node.args[0], step,
                                            HOST_CALLBACKS[end.library.qualname]))
    return tuple(found)
