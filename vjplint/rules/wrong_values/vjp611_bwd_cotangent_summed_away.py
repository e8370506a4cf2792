from __future__ import annotations

import ast
from typing import Dict, List, Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

TOTALS = frozenset({"sum", "mean", "nansum", "nanmean"})
CALLBACKS = frozenset({"jax.pure_callback", "jax.experimental.io_callback", "jax.experimental.host_callback.call"})


class BwdCotangentSummedAway(Rule):
    """## What it does
    Flags a custom_vjp bwd that uses the output cotangent `g` only through its total
    (`jnp.sum(g)`, `g.mean()`, or `jnp.outer(v, g).sum(axis=1)`, which is `v * jnp.sum(g)`) and
    multiplies that total with an array to make an input's cotangent, when the primal output
    provably has at least one axis (its rank shows it, or a host callback declares a non-empty
    result shape). Such a bwd is the gradient of the *summed* output scaled by `sum(g)`, not the
    vector-Jacobian product `J.T @ g` (pyro-ppl/numpyro#1668). A total returned alone (the input
    broadcasts to the output) or `jnp.sum(g * y)` (a weighted sum) is left alone.

    ## Why is this bad?
    The VJP must weigh each output entry's derivative by that entry's cotangent. Using
    `sum(g)` gives every output entry the same weight: it is right only when the output has one
    entry or every output entry has the same derivative, and silently wrong otherwise, under
    `grad` and `jit(grad)`, with no error. Measured on JAX 0.10.2
    (`docs/facts/scripts/hazard_bwd_cotangent_summed.py`): for a host layer `W @ z` with bwd
    `outer(grad_of_sum, g).sum(axis=1)`, `grad` of `sum(y)` is twice the true gradient (the sum
    counts both entries), and `sum(y ** 2)` and `y[0]` are wrong too; for
    `jnp.sum(x ** 2, axis=-1, keepdims=True)` with bwd `2 * x * jnp.sum(g)`, a 1-D `x` (one output
    entry) is right and a batch of rows is wrong.

    ## Example
    ```python
    def layer_bwd(res, g):
        (z,) = res
        grad_of_sum = jax.pure_callback(host_grad_of_sum, jax.ShapeDtypeStruct(z.shape, z.dtype), z)
        return (jnp.outer(grad_of_sum, g).sum(axis=1),)
    ```

    ## Use instead
    ```python
    def layer_bwd(res, g):
        (z,) = res
        return (jax.pure_callback(host_vjp, jax.ShapeDtypeStruct(z.shape, z.dtype), z, g),)  # J.T @ g
    ```

    ## Fix safety
    No fix: the Jacobian-transpose product needs the model's own derivative.
    """

    CODE = "VJP611"
    NAME = "bwd-cotangent-summed-away"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def row_energy(x):
    return jnp.sum(x ** 2, axis=-1, keepdims=True)

def row_energy_fwd(x):
    return row_energy(x), x

def row_energy_bwd(x, g):
    return (2.0 * x * jnp.sum(g),)

row_energy.defvjp(row_energy_fwd, row_energy_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def row_energy(x):
    return jnp.sum(x ** 2, axis=-1, keepdims=True)

def row_energy_fwd(x):
    return row_energy(x), x

def row_energy_bwd(x, g):
    return (2.0 * x * g,)

row_energy.defvjp(row_energy_fwd, row_energy_bwd)
''']

    def check(self) -> None:
        for reg in self.model.facts.registered_bwds():
            d, bwd = reg.d, reg.bwd
            assert bwd.node is not None
            shape = _output_has_axes(self.model, d)
            if shape is None:
                continue
            g = reg.params[-1]
            totals = _Totals(self.model, bwd.node, g)
            for ret in self.model.facts.returns_of(bwd.node):
                if not isinstance(ret.value, ast.Tuple):
                    continue
                for slot in ret.value.elts:
                    total = totals.only_through_total(slot)
                    if total is None or not totals.scaled_by_array(slot):
                        continue
                    self.report(slot, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}` returns "
                                      f"`{self.quote(slot, 50)}`, which uses the cotangent `{g}` only through "
                                      f"its total {self._total(total, g)} while the output has axes ({shape}): "
                                      f"every output entry gets the same weight, so this is the gradient of the "
                                      f"summed output, not `J.T @ {g}`, and gradients may be silently wrong "
                                      f"unless every output entry has the same derivative; weigh each output entry's derivative by its "
                                      f"own cotangent (a vjp of the model with `{g}`)",
                                severity=Severity.WARNING)


    def _total(self, total: ast.expr, g: str) -> str:
        """`jnp.sum(g)`, or the outer form with what it equals."""
        shown = f"`{self.quote(total, 40)}`"
        if isinstance(total, ast.Call) and isinstance(total.func, ast.Attribute) \
                and isinstance(total.func.value, ast.Call) and len(total.func.value.args) == 2:
            a, b = total.func.value.args
            other = a if isinstance(b, ast.Name) and b.id == g else b
            return f"({shown} is `{self.quote(other, 20)}` times the sum of `{g}`)"
        return shown


def _output_has_axes(model: FileModel, d: CustomDerivative) -> Optional[str]:
    """Why the primal's output provably has at least one axis, or None."""
    assert d.primal is not None
    returns = model.facts.returns_of(d.primal)
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = returns[0].value
    if isinstance(value, ast.Call) and (model.index.qualname(value.func) or "") in CALLBACKS and len(value.args) >= 2:
        spec = value.args[1]
        if isinstance(spec, ast.Call) and spec.args and isinstance(spec.args[0], ast.Tuple) and spec.args[0].elts:
            return f"`{model.quote(value.func, 30)}` declares the result shape `{model.quote(spec.args[0], 20)}`"
        return None
    rank = model.facts.own_ranks(d.primal).of(value)
    if rank is None:
        return None
    least = rank.offset if rank.base is None else rank.floor + rank.offset
    return f"`{model.quote(value, 30)}` has {rank.text()}" if least >= 1 else None


class _Totals:
    """How a bwd's returned expressions depend on the cotangent `g`, following names bound once."""

    def __init__(self, model: FileModel, fn: FunctionNode, g: str) -> None:
        self.model = model
        self.g = g
        self.bound: Dict[str, List[ast.expr]] = {}
        for node in model.facts.own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.bound.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
                for target in walk(getattr(node, "target", node)):
                    if isinstance(target, ast.Name):
                        self.bound.setdefault(target.id, []).extend([node, node])  # never followed

    def _value(self, name: str) -> Optional[ast.expr]:
        values = self.bound.get(name, [])
        return values[0] if len(values) == 1 else None

    def only_through_total(self, e: ast.expr, depth: int = 0) -> Optional[ast.expr]:
        """The total of `g` that `e` reaches `g` through, when every path to `g` goes through one."""
        totals: List[ast.expr] = []
        if not self._walk(e, totals, depth) or not totals:
            return None
        return totals[0]

    def _walk(self, e: ast.AST, totals: List[ast.expr], depth: int) -> bool:
        """False when `e` reaches `g` other than through a total (or through something unread)."""
        if depth > 8:
            return False
        if isinstance(e, ast.Name):
            if e.id == self.g:
                return False
            value = self._value(e.id)
            if value is None:
                return e.id not in self.bound or not self._mentions_g(e.id)
            return self._walk(value, totals, depth + 1)
        if isinstance(e, ast.expr) and self._is_total(e):
            totals.append(e)
            return True
        if isinstance(e, (ast.Lambda, ast.FunctionDef)):
            return True
        return all(self._walk(child, totals, depth) for child in ast.iter_child_nodes(e))

    def _mentions_g(self, name: str) -> bool:
        return any(isinstance(n, ast.Name) and n.id == self.g for v in self.bound.get(name, []) for n in walk(v))

    def _is_total(self, e: ast.expr) -> bool:
        """`jnp.sum(g)`, `g.sum()`, `jnp.mean(c * g)`, `jnp.outer(v, g).sum(axis=1)`."""
        if not isinstance(e, ast.Call):
            return False
        q = self.model.index.qualname(e.func) or ""
        if q.startswith(("jax.numpy.", "numpy.")) and q.rsplit(".", 1)[-1] in TOTALS and len(e.args) == 1 \
                and not e.keywords:
            return self._just_g(e.args[0])
        if isinstance(e.func, ast.Attribute) and not q and e.func.attr in TOTALS:
            if not e.args and not e.keywords:
                return self._just_g(e.func.value)
            axis = e.args[0] if len(e.args) == 1 and not e.keywords else \
                e.keywords[0].value if not e.args and len(e.keywords) == 1 and e.keywords[0].arg == "axis" else None
            inner = e.func.value
            if axis is not None and isinstance(inner, ast.Call) and len(inner.args) == 2 and not inner.keywords \
                    and (self.model.index.qualname(inner.func) or "").rsplit(".", 1)[-1] == "outer":
                which = _axis(axis)
                g_side = 1 if which in (1, -1) else 0 if which in (0, -2) else None
                return g_side is not None and self._just_g(inner.args[g_side]) \
                    and not self._reaches_g(inner.args[1 - g_side])
        return False

    def _just_g(self, e: ast.expr) -> bool:
        """`g`, or `g` times/over number literals."""
        if isinstance(e, ast.Name):
            return e.id == self.g
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div)):
            return self._just_g(e.left) and isinstance(e.right, ast.Constant) or \
                isinstance(e.op, ast.Mult) and isinstance(e.left, ast.Constant) and self._just_g(e.right)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self._just_g(e.operand)
        return False

    def _reaches_g(self, e: ast.expr, depth: int = 0) -> bool:
        for n in walk(e):
            if isinstance(n, ast.Name) and (n.id == self.g or depth < 8 and self._value(n.id) is not None
                                            and self._reaches_g(self._value(n.id), depth + 1)):  # type: ignore[arg-type]
                return True
        return False

    def scaled_by_array(self, slot: ast.expr) -> bool:
        """The slot is not the total alone (times numbers): an array multiplies it, or the total
        is an outer product's row sums."""
        e = slot
        for _ in range(8):
            if isinstance(e, ast.Name) and self._value(e.id) is not None:
                e = self._value(e.id)  # type: ignore[assignment]
                continue
            break
        if isinstance(e, ast.Call) and self._is_total(e):
            return isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Call)  # the outer form
        return not self._just_number_times_total(e)

    def _just_number_times_total(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Call) and self._is_total(e):
            return True
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div)):
            return (isinstance(e.left, ast.Constant) and self._just_number_times_total(e.right)) or \
                (isinstance(e.right, ast.Constant) and self._just_number_times_total(e.left))
        if isinstance(e, ast.UnaryOp):
            return self._just_number_times_total(e.operand)
        return False


def _axis(e: ast.expr) -> Optional[int]:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) \
            and isinstance(e.operand.value, int):
        return -e.operand.value
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None
