from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, List, Optional, Set, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.model.semantic import FunctionNode, walk

ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "numpy.")
# Constructors whose result may be a zero (or a float0 placeholder): a cotangent, not a term.
ZERO_MAKERS = frozenset({"zeros", "zeros_like", "full", "full_like", "empty", "empty_like"})
LINEAR_OPS = (ast.Mult, ast.Div, ast.MatMult)


class BwdTermWithoutCotangent(Rule):
    """## What it does
    Flags a `jax.custom_vjp` bwd rule that returns, for an input, a cotangent with a term that
    does not depend on the output cotangent `g` (`slope * x + decay * w`), or a cotangent built
    from the residuals alone (`decay * w`). Zeros (`0.0`, `jnp.zeros_like(...)`, `None`) are fine,
    and a term computed by a function the linter does not follow is not claimed.

    ## Why is this bad?
    JAX assumes bwd is linear in the cotangent. When the output's cotangent is a symbolic zero
    (the output is only monitored, under `stop_gradient`, or unused by the loss) JAX never calls
    bwd, and it scales `g` with the loss, so the extra term is silently dropped or not scaled:
    `grad(lambda w: 2 * loss(w))` is not `2 * grad(loss)` (jax-ml/jax#6523). Measured in
    `docs/facts/scripts/hazard_bwd_affine.py`: no error under `grad` or `jit(grad)`, wrong values.

    ## Example
    ```python
    def infer_bwd(res, g):
        w, x, y = res
        slope = (1.0 - y ** 2) * g
        return slope * x + DECAY * w, slope * w
    ```

    ## Use instead
    ```python
    def infer_bwd(res, g):
        w, x, y = res
        slope = (1.0 - y ** 2) * g
        return slope * x, slope * w

    def loss(w):
        return jnp.sum(infer(w, X)) + 0.5 * DECAY * jnp.sum(w ** 2)   # the regulariser in the loss
    ```

    ## Fix safety
    No automatic fix: where the term belongs (the loss, or multiplied by `g`) is the author's choice.
    """

    CODE = "VJP606"
    NAME = "bwd-term-without-cotangent"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})
    INVALID = ['''
import jax
import jax.numpy as jnp

DECAY = 0.1

@jax.custom_vjp
def infer(w, x):
    return jnp.tanh(w * x)

def infer_fwd(w, x):
    y = jnp.tanh(w * x)
    return y, (w, x, y)

def infer_bwd(res, g):
    w, x, y = res
    slope = (1.0 - y ** 2) * g
    return slope * x + DECAY * w, slope * w

infer.defvjp(infer_fwd, infer_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def infer(w, x):
    return jnp.tanh(w * x)

def infer_fwd(w, x):
    y = jnp.tanh(w * x)
    return y, (w, x, y)

def infer_bwd(res, g):
    w, x, y = res
    slope = (1.0 - y ** 2) * g
    return slope * x, slope * w

infer.defvjp(infer_fwd, infer_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg in d.registrations:
            if reg.method != "defvjp" or len(reg.rules) != 2:
                continue
            bwd = reg.rules[1].node
            if bwd is None or bwd in self._seen:
                continue
            self._seen.add(bwd)
            if not d.nondiff_unresolved and not d.bound_self and not reg.rules[1].bound_keywords:
                self._check(d.name, reg.rules[1].name or getattr(bwd, "name", "<lambda>"), bwd, len(d.nondiff),
                            reg.rules[1].bound_positional)

    def _check(self, primal: str, name: str, bwd: FunctionNode, nondiff: int, bound: int = 0) -> None:
        args = bwd.args
        params = [a.arg for a in (*args.posonlyargs, *args.args)][bound:]  # `partial(bwd, cfg)` binds the first
        if args.vararg is not None or len(params) - len(args.defaults) != nondiff + 2:
            return  # another arity than JAX's: the arity rules report it, and `g` is unknown
        g = params[nondiff + 1]  # JAX calls bwd(*nondiff, residuals, g); later parameters keep their defaults
        flow = _Dependence(self.model, bwd, g)
        for ret in self.model.facts.returns_of(bwd):
            value = flow.expand(ret.value) if ret.value is not None else None
            if not isinstance(value, (ast.Tuple, ast.List)):
                continue  # a bare return: other rules check its structure
            for slot in value.elts:
                self._slot(primal, name, g, flow, slot)

    def _slot(self, primal: str, name: str, g: str, flow: "_Dependence", slot: ast.expr) -> None:
        if isinstance(slot, ast.Starred):
            return
        if not flow.depends(slot):
            # A residual returned as it is may be a zero, a float0 or state carried on purpose (fp8's
            # scale and history), and a constant is usually an integer input's ignored cotangent.
            computed = not isinstance(flow.expand(slot), (ast.Name, ast.Attribute, ast.Subscript, ast.Constant))
            if computed and flow.claimable(slot):
                shown = f"`{self.quote(slot, 40)}`"
                if isinstance(slot, ast.Name):
                    shown += f" (`{self.quote(flow.expand(slot), 40)}`)"
                self.report(slot, (
                    f"bwd `{name}` of `{primal}` returns {shown}, which does not depend on the "
                    f"output cotangent `{g}`: JAX assumes bwd is linear in `{g}`, skips bwd when the output's "
                    f"cotangent is zero (the output only monitored, under `stop_gradient` or unused) and scales "
                    f"`{g}` with the loss, so this gradient may be silently dropped or wrongly scaled "
                    f"(jax-ml/jax#6523). Multiply it by `{g}`, or move the term into the loss"))
            return
        for term in flow.offsets(slot):
            self.report(term, (
                f"bwd `{name}` of `{primal}` adds `{self.quote(term, 40)}`, a term that does not depend on the "
                f"output cotangent `{g}`: JAX assumes bwd is linear in `{g}`, skips bwd when the output's "
                f"cotangent is zero (the output only monitored, under `stop_gradient` or unused) and scales "
                f"`{g}` with the loss, so this term may be silently dropped or wrongly scaled "
                f"(`grad(lambda w: 2 * f(w))` is not `2 * grad(f)`; jax-ml/jax#6523). Move it into the loss "
                f"(e.g. a regulariser added to the objective), or multiply it by `{g}`"))


class _Dependence:
    """Which names of bwd depend on its cotangent parameter, and the additive terms that do not."""

    def __init__(self, model: FileModel, fn: FunctionNode, g: str) -> None:
        self.index = model.index
        # the statements that bind: (their source, the names their targets bind), in body order
        binders = [(node, _targets(node)) for node in model.facts.own_nodes(fn) if node.__class__ in _BINDERS]
        self.single: Dict[str, ast.expr] = {}
        counts: Dict[str, int] = {}
        flows: List[Tuple[ast.AST, List[str]]] = []
        for node, targets in binders:
            names = [n.id for target in targets for n in walk(target) if n.__class__ is ast.Name]  # type: ignore[attr-defined]
            for name in names:
                counts[name] = counts.get(name, 0) + 1
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.single[node.targets[0].id] = node.value
            source = _source(node)
            if source is not None:
                flows.append((source, names))
        self.single = {k: v for k, v in self.single.items() if counts.get(k) == 1}
        self.tainted: Set[str] = {g}
        for _ in range(4):  # a fixpoint over loops and reassignments
            before = len(self.tainted)
            for source, names in flows:
                if self.depends(source):
                    self.tainted.update(names)
            if len(self.tainted) == before:
                break

    def depends(self, expr: ast.AST) -> bool:
        tainted = self.tainted
        return any(n.__class__ is ast.Name and n.id in tainted for n in walk(expr))  # type: ignore[attr-defined]

    def expand(self, expr: ast.expr, depth: int = 0) -> ast.expr:
        while isinstance(expr, ast.Name) and expr.id in self.single and depth < 4:
            expr, depth = self.single[expr.id], depth + 1
        return expr

    def offsets(self, expr: ast.expr, depth: int = 0) -> Iterator[ast.expr]:
        """Additive terms of a `g`-dependent expression, through linear operations, that do not depend on `g`."""
        if depth > 8:
            return
        expr = self.expand(expr)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            for side in (expr.left, expr.right):
                if self.depends(side):
                    yield from self.offsets(side, depth + 1)
                elif self.claimable(side):
                    yield side
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, LINEAR_OPS):
            left, right = self.depends(expr.left), self.depends(expr.right)
            if left and not right:
                yield from self.offsets(expr.left, depth + 1)
            elif right and not left and not isinstance(expr.op, ast.Div):
                yield from self.offsets(expr.right, depth + 1)
        elif isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            yield from self.offsets(expr.operand, depth + 1)

    def claimable(self, expr: ast.expr, depth: int = 0) -> bool:
        """A nonzero value the linter can see through: arithmetic over names, constants and array
        functions (a call to anything else might return a zero or a placeholder)."""
        if depth > 8:
            return False
        expr = self.expand(expr)
        if isinstance(expr, ast.Constant):
            return type(expr.value) in (int, float, complex) and expr.value != 0
        if isinstance(expr, ast.Name):
            return expr.id not in self.single  # a parameter or an unpacked residual
        if isinstance(expr, ast.Attribute):
            return not _mentions_float0(expr)
        if isinstance(expr, ast.Subscript):
            return self.claimable(expr.value, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return isinstance(expr.op, (ast.USub, ast.UAdd)) and self.claimable(expr.operand, depth + 1)
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.Mult):
                return self.claimable(expr.left, depth + 1) and self.claimable(expr.right, depth + 1)
            if isinstance(expr.op, (ast.Div, ast.Pow, ast.MatMult)):
                return self.claimable(expr.left, depth + 1) and self._plain(expr.right)
            if isinstance(expr.op, (ast.Add, ast.Sub)):
                return self.claimable(expr.left, depth + 1) or self.claimable(expr.right, depth + 1)
            return False
        if isinstance(expr, ast.Call):
            q = self.index.qualname(expr.func) or ""
            if not q.startswith(ARRAY_NAMESPACES) or q.rsplit(".", 1)[-1] in ZERO_MAKERS or _mentions_float0(expr):
                return False
            return any(self.claimable(a, depth + 1) for a in expr.args if not isinstance(a, ast.Starred)
                       and not _dtype(a))  # `jnp.asarray(zeros, jnp.bfloat16)`: the dtype is no term
        return False

    def _plain(self, expr: ast.expr) -> bool:
        return not any(isinstance(n, ast.Call) for n in walk(expr)) or self.claimable(expr)


_BINDERS = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr,
                      ast.FunctionDef, ast.AsyncFunctionDef})  # the node types `_targets` reads


def _targets(node: ast.AST) -> List[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, ast.NamedExpr):
        return [node.target]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [ast.Name(id=node.name, ctx=ast.Store())]
    return []


def _source(node: ast.AST) -> Optional[ast.AST]:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        return node.value
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return node.iter
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node  # a local helper that closes over `g` carries it
    return None


def _dtype(expr: ast.expr) -> bool:
    """A dtype argument: `jnp.bfloat16`, `np.float32`, `"float32"`."""
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else None
    if isinstance(expr, ast.Constant):
        name = expr.value if isinstance(expr.value, str) else None
    return name is not None and re.fullmatch(r"(b?float|u?int|complex)\d*(_\w*)?|bool_?|dtype", name) is not None


def _mentions_float0(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "float0" or isinstance(n, ast.Name) and n.id == "float0"
               for n in walk(expr))
