"""Which names of a jvp rule hold tangents or primal inputs, and whether a rule's primal output is
the primal's own expression with an input cleaned (clip, where, maximum, ...): read by VJP603."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode
from vjplint.syntax.walk import walk

NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.special.")
# Calls that return a "cleaned" copy of an input (the value changes on part of the domain).
CLEANING = frozenset({"maximum", "minimum", "clip", "where", "nan_to_num", "abs", "absolute", "fmax", "fmin"})
# Calls and methods whose result has the value of their (first) argument.
SAME_VALUE = frozenset({"asarray", "array", "copy", "astype", "reshape", "ravel", "squeeze", "expand_dims",
                        "stop_gradient", "block_until_ready", "view", "flatten", "convert_element_type"})
# Attributes that read no value of the tangent.
META = frozenset({"shape", "dtype", "ndim", "size"})
class PrimalFlow:
    """Which names of one jvp rule hold tangents or primal inputs (by position)."""

    def __init__(self, model: FileModel, fn: FunctionNode, primals: str, tangents: str) -> None:
        self.model, self.primals, self.tangents_param = model, primals, tangents
        self.tainted: Dict[str, str] = {tangents: f"`{tangents}`"}
        self.primal_index: Dict[str, int] = {}
        self.values: Dict[str, List[ast.expr]] = {}
        nodes = [n for n in model.facts.own_nodes(fn) if isinstance(n, ast.Assign)]
        for _ in range(2):  # twice: names assigned from later names
            for node in nodes:
                for target in node.targets:
                    self._bind(target, node.value)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v)
            return
        if isinstance(value, ast.Name) and value.id == self.primals:
            if isinstance(target, (ast.Tuple, ast.List)):
                for i, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        self.primal_index[element.id] = i
            return
        if isinstance(target, ast.Name):
            index = self._primal_item(value)
            if index is not None:
                self.primal_index[target.id] = index
                return
            known = self.values.setdefault(target.id, [])
            if all(v is not value for v in known):
                known.append(value)
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Call):
            return  # `out, out_dot = jax.jvp(...)`, a helper: not followed
        via = self.tangent_use(value)
        if via is not None:
            for name in walk(target):
                if isinstance(name, ast.Name):
                    self.tainted.setdefault(name.id, via)

    def _primal_item(self, expr: ast.expr) -> Optional[int]:
        if (isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and expr.value.id == self.primals
                and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int)):
            return expr.slice.value
        return None

    def tangent_use(self, expr: ast.expr) -> Optional[str]:
        """How `expr` reads a tangent value through arithmetic, subscripts, literals and jnp/lax calls."""
        if isinstance(expr, ast.Name):
            return self.tainted.get(expr.id)
        if isinstance(expr, ast.Attribute):
            return None if expr.attr in META else self.tangent_use(expr.value)
        if isinstance(expr, ast.Subscript):
            return self.tangent_use(expr.value)
        if isinstance(expr, ast.BinOp):
            return self.tangent_use(expr.left) or self.tangent_use(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return self.tangent_use(expr.operand)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return next((u for u in map(self.tangent_use, expr.elts) if u), None)
        if isinstance(expr, ast.Starred):
            return self.tangent_use(expr.value)
        if isinstance(expr, ast.Call):
            q = self.model.index.qualname(expr.func) or ""
            if not q.startswith(NAMESPACES) or q.rsplit(".", 1)[-1] in ("zeros_like", "ones_like", "shape"):
                return None
            for arg in expr.args:
                used = self.tangent_use(arg)
                if used is not None:
                    return f"through `{self.model.quote(expr, 40)}`"
        return None

    def primal_of(self, expr: ast.expr) -> Optional[int]:
        if isinstance(expr, ast.Name):
            return self.primal_index.get(expr.id)
        return self._primal_item(expr)

    def cleaned_primal(self, expr: ast.expr) -> Optional[ast.Call]:
        """`expr` is (or names, assigned once) a cleaning call on a primal input."""
        if isinstance(expr, ast.Name) and len(self.values.get(expr.id, [])) == 1:
            expr = self.values[expr.id][0]
        if not isinstance(expr, ast.Call):
            return None
        q = self.model.index.qualname(expr.func) or ""
        if not q.startswith(NAMESPACES) or q.rsplit(".", 1)[-1] not in CLEANING:
            return None
        if any(self.primal_of(a) is not None for a in expr.args):
            return expr
        return None


class CleanedComparison:
    """The primal's return expression against the rule's primal output, parameter by position."""

    def __init__(self, flow: PrimalFlow, primal_params: List[str], nondiff: Tuple[int, ...]) -> None:
        self.flow = flow
        self.diff_params = [p for i, p in enumerate(primal_params) if i not in nondiff]
        self.cleaned: Optional[ast.expr] = None

    def same_but_cleaned(self, primal_expr: ast.expr, rule_expr: ast.expr) -> Optional[ast.expr]:
        return self.cleaned if self._same(primal_expr, rule_expr) else None

    def _same(self, a: ast.AST, b: ast.AST) -> bool:
        if isinstance(a, ast.Name) and a.id in self.diff_params:
            index = self.diff_params.index(a.id)
            if self.flow.primal_of(b) == index:  # type: ignore[arg-type]
                return True
            cleaned = self.flow.cleaned_primal(b)  # type: ignore[arg-type]
            if cleaned is not None and any(self.flow.primal_of(x) == index for x in cleaned.args):
                self.cleaned = self.cleaned or cleaned
                return True
            return False
        if type(a) is not type(b):
            return False
        if isinstance(a, ast.AST):
            for field in a._fields:
                if field in ("ctx", "type_comment"):
                    continue
                x, y = getattr(a, field, None), getattr(b, field, None)
                if isinstance(x, list):
                    if not isinstance(y, list) or len(x) != len(y) or not all(self._same(p, q) for p, q in zip(x, y)):
                        return False
                elif isinstance(x, ast.AST):
                    if not isinstance(y, ast.AST) or not self._same(x, y):
                        return False
                elif x != y:
                    return False
        return True
