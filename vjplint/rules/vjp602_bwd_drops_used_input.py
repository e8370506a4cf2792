from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.infer import annotation_evidence, argument_at, default_evidence, name_evidence, usage_evidence
from vjplint.model import CustomDerivative, Signature
from vjplint.rules.base import Rule
from vjplint.semantic import FunctionNode

# jnp/lax functions whose result carries no derivative of these arguments (all of them).
NOT_DIFFERENTIABLE = frozenset({
    "argmax", "argmin", "argsort", "round", "rint", "floor", "ceil", "sign", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "isnan", "isinf", "isfinite", "nonzero", "searchsorted", "digitize",
    "bincount", "zeros_like", "ones_like", "full_like", "empty_like", "shape", "ndim", "size", "result_type",
    "stop_gradient", "logical_and", "logical_or", "logical_not", "top_k_indices", "floor_divide", "remainder",
    # Iterations to a fixed point: their result need not depend on the initial guess (implicit
    # differentiation returns zero for it, correctly), so no claim is made through them.
    "fori_loop", "while_loop", "custom_root", "custom_linear_solve",
})
# Differentiable in their first argument only (the others are indices or shapes).
FIRST_ONLY = frozenset({"take", "take_along_axis", "reshape", "broadcast_to", "dynamic_slice", "gather", "roll",
                        "tile", "repeat", "full"})
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.")
METHODS = frozenset({"sum", "mean", "reshape", "transpose", "astype", "squeeze", "ravel", "dot", "max", "min",
                     "clip", "conj", "cumsum", "prod", "std", "var", "flatten", "swapaxes"})
INTEGER_DTYPES = ("int", "bool", "uint", "int8", "int16", "int32", "int64", "uint8", "uint32", "bool_")
# Parameters usually holding integers, keys or masks, whose None cotangent is what JAX wants.
INTEGER_NAMES = frozenset({"mask", "masks", "idx", "index", "indices", "ids", "key", "keys", "rng", "seed",
                           "label", "labels", "positions", "segment_ids", "perm", "permutation", "counts", "lengths",
                           "offsets", "rngs", "prng_key", "indptr", "row", "col", "rows", "cols", "target", "targets",
                           "y_true"})


class BwdDropsUsedInput(Rule):
    """## What it does
    Flags a `jax.custom_vjp` whose bwd returns `None` or a literal zero (`0.0`, `jnp.zeros_like(...)`)
    for a differentiable argument that the primal's output depends on: the argument reaches a
    return value of the primal through arithmetic or differentiable `jnp`/`lax` functions (not
    only through indexing, comparisons, shapes, `stop_gradient` or integer casts). Arguments that
    are evidently not differentiated (annotated or defaulting to Python values, used as Python
    values, named like integer arrays, masks or keys: `idx`, `mask`, `key`) are left alone, and a
    dependence through a function the linter does not follow is not claimed. A bwd that gives a
    gradient to an input the output does not use (a straight-through estimator routing the
    gradient of a quantized copy to the original, as in flax's fp8 ops) is a design, not reported.

    ## Why is this bad?
    JAX treats `None` in bwd's output as a zero cotangent and never checks it against the
    primal: the gradient with respect to that argument is silently zero, and so is the gradient
    of everything upstream of it when the argument is computed from differentiated values
    (jax-ml/jax#17496: in a two-layer chain the first layer's weights got a zero gradient).
    Measured (`docs/facts/scripts/hazard_none_cotangent.py`): `None`, `jnp.zeros_like(v)` and
    `0.0 * g` all give zeros under `grad` and `jit(grad)`, with no error. When the custom_vjp is
    itself the bwd of another one, a `None` for the residuals it received makes
    `jax.grad(jax.grad(f))` silently zero (jax-ml/jax#21220).

    ## Example
    ```python
    @jax.custom_vjp
    def matvec(m, v):
        return m @ v

    def matvec_fwd(m, v):
        return m @ v, v

    def matvec_bwd(v, g):
        return jnp.outer(g, v), None     # the output depends on v
    ```

    ## Use instead
    ```python
    def matvec_fwd(m, v):
        return m @ v, (m, v)

    def matvec_bwd(res, g):
        m, v = res
        return jnp.outer(g, v), m.T @ g
    ```
    When the argument is an integer array, a key, or is never differentiated, `None` is right:
    silence the warning with `# noqa: VJP602`, or pass a Python value in `nondiff_argnums`.

    ## Fix safety
    No automatic fix: the missing cotangent has to be derived.
    """

    CODE = "VJP602"
    NAME = "bwd-drops-used-input"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp",)
    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def matvec(m, v):
    return m @ v

def matvec_fwd(m, v):
    return m @ v, v

def matvec_bwd(v, g):
    return jnp.outer(g, v), None

matvec.defvjp(matvec_fwd, matvec_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def matvec(m, v):
    return m @ v

def matvec_fwd(m, v):
    return m @ v, (m, v)

def matvec_bwd(res, g):
    m, v = res
    return jnp.outer(g, v), m.T @ g

matvec.defvjp(matvec_fwd, matvec_bwd)
''']

    def check(self) -> None:
        for d in self.model.derivatives:
            if d.kind != "vjp" or d.api != "jax" or d.primal is None or d.nondiff_unresolved or d.bound_self:
                continue
            primal = d.primal
            if primal.args.vararg is not None or primal.args.kwonlyargs:
                continue
            sig = Signature.of(primal)
            diff = [p for i, p in enumerate(sig.positional) if i not in d.nondiff]
            for reg in d.registrations:
                if reg.method == "defvjp" and len(reg.rules) == 2 and reg.rules[1].node is not None:
                    self._check(d, primal, sig, diff, reg.rules[1].node, reg.rules[1].name)

    def _check(self, d: CustomDerivative, primal: FunctionNode, sig: Signature, diff: List[str],
               bwd: FunctionNode, bwd_name: Optional[str]) -> None:
        returns = [r.value for r in self.model.facts.returns_of(bwd)]
        if not returns or not all(isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(diff)
                                  and not any(isinstance(e, ast.Starred) for e in v.elts) for v in returns):
            return
        flows = _Flow(self, primal)
        for i, param in enumerate(diff):
            if not all(self._zero(v.elts[i]) for v in returns) and flows.reaches_output(param) is None:  # type: ignore[union-attr]
                return  # a gradient for an input the output does not use: rerouted (straight-through) by design
        for i, param in enumerate(diff):
            slots = [v.elts[i] for v in returns]  # type: ignore[union-attr]
            if not all(self._zero(s) for s in slots) or self._not_differentiated(primal, sig, param):
                continue
            if self._only_constants_passed(d, sig.positional.index(param), param):
                continue
            through = flows.reaches_output(param)
            if through is None:
                continue
            if isinstance(slots[0], ast.Constant) and slots[0].value is None:
                shown = "`None`"
            elif isinstance(slots[0], (ast.Tuple, ast.List)):
                shown = f"`{self.quote(slots[0], 30)}` (zero cotangents)"
            else:
                shown = f"a zero (`{self.quote(slots[0], 30)}`)"
            name = bwd_name or getattr(bwd, "name", "<lambda>")
            outer = next((o for o in self._bwd_owners().get(id(d.primal), ()) if o is not d), None)
            nested = (f" `{d.name}` is the bwd of custom_vjp `{outer.name}`, so `jax.grad(jax.grad({outer.name}))` "
                      f"loses this term (jax-ml/jax#21220)." if outer is not None else "")
            self.report(slots[0], (
                f"bwd `{name}` of `{d.name}` returns {shown} for `{param}`, but the primal's output depends on "
                f"`{param}` (`{self.quote(through, 50)}`): JAX takes it as a zero cotangent without a check, so "
                f"the gradient with respect to `{param}`, and of everything upstream that `{param}` is computed "
                f"from (jax-ml/jax#17496), may be silently zero.{nested} Return its cotangent; if `{param}` is an "
                f"integer array or is never differentiated, keep it and silence this with `# noqa: VJP602`"))

    def _bwd_owners(self) -> Dict[int, List[CustomDerivative]]:
        """id(bwd node) -> the derivatives registering it as bwd, in order; built once per check
        (a scan of every derivative per report was quadratic in dense modules)."""
        cached = getattr(self, "_owners", None)
        if cached is not None and cached[0] is self.model:
            return cached[1]
        owners: Dict[int, List[CustomDerivative]] = {}
        for o in self.model.derivatives:
            for reg in o.registrations:
                for r in reg.rules[1:2]:
                    if r.node is not None:
                        found = owners.setdefault(id(r.node), [])
                        if not any(x is o for x in found):
                            found.append(o)
        self._owners = (self.model, owners)
        return owners

    def _zero(self, expr: ast.expr) -> bool:
        if isinstance(expr, (ast.Tuple, ast.List)):  # `(None,)` for a tuple argument
            return bool(expr.elts) and all(self._zero(e) for e in expr.elts)
        if isinstance(expr, ast.Constant):
            return expr.value is None or (type(expr.value) in (int, float) and expr.value == 0)
        if isinstance(expr, ast.Call):
            q = self.model.index.qualname(expr.func) or ""
            return q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in ("zeros_like", "zeros")
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
            return any(isinstance(s, ast.Constant) and type(s.value) in (int, float) and s.value == 0
                       for s in (expr.left, expr.right))
        return False

    def _only_constants_passed(self, d: CustomDerivative, position: int, param: str) -> bool:
        """Every call in this module passes, at `position`, a value built from constants and
        module-level names (a function's variable only through its shape, `ones_like(x)`): it is
        never differentiated here."""
        rules = {id(r.node) for _, r in self.model.facts.rules_of(d) if r.node is not None}
        sites = [s for s in d.call_sites if id(s.enclosing) not in rules]  # fwd calling the primal
        if not sites:
            return False
        for site in sites:
            arg = argument_at(site.call, position - site.positional_offset, param)
            if arg is None:
                return False
            if self._carries_a_variable(arg):
                return False
        return True

    def _carries_a_variable(self, expr: ast.AST) -> bool:
        """A function's variable reaches `expr` other than through shape-only calls (`ones_like`)."""
        index = self.model.index
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call):
                q = index.qualname(node.func) or ""
                if q.startswith(ARRAY_NAMESPACES) and q.rsplit(".", 1)[-1] in NOT_DIFFERENTIABLE:
                    continue
            if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "size"):
                continue
            if isinstance(node, ast.Name):
                found = index.resolve(node.id, index.scope_of(node))
                if found is None or found[0].is_function:
                    return True
            stack.extend(ast.iter_child_nodes(node))
        return False

    def _not_differentiated(self, primal: FunctionNode, sig: Signature, param: str) -> bool:
        if param.lower() in INTEGER_NAMES or param.lower().endswith(("_idx", "_ids", "_mask", "_key", "_index")):
            return True
        evidence = [*annotation_evidence(self.model, sig.annotations.get(param), param), *name_evidence(param),
                    *usage_evidence(self.model, primal, param)]
        if param in sig.defaults:
            evidence.extend(default_evidence(self.model, sig.defaults[param]))
        return any(e.kind in ("static", "callable") for e in evidence)


class _Flow:
    """Which names of the primal carry a differentiable dependence on a parameter."""

    def __init__(self, rule: Rule, fn: FunctionNode) -> None:
        self.rule, self.fn = rule, fn
        self.index = rule.model.index
        self.assigns = sorted((n for n in rule.model.facts.own_nodes(fn)
                               if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))),
                              key=lambda n: (n.lineno, n.col_offset))

    def reaches_output(self, param: str) -> Optional[ast.expr]:
        """The first return value that depends on `param` differentiably, or None."""
        tainted: Set[str] = {param}
        for _ in range(3):  # a fixpoint over loops and reassignments
            before = len(tainted)
            for node in self.assigns:
                value = node.value
                if value is None or not self.carries(value, tainted):
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    tainted.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            if len(tainted) == before:
                break
        for ret in self.rule.model.facts.returns_of(self.fn):
            if ret.value is not None and self.carries(ret.value, tainted):
                return ret.value
        return None

    def carries(self, expr: ast.expr, names: Set[str], depth: int = 0) -> bool:
        if depth > 20:
            return False
        again = lambda e: self.carries(e, names, depth + 1)  # noqa: E731
        if isinstance(expr, ast.Name):
            return expr.id in names
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.Pow)):
                return again(expr.left) or again(expr.right)
            return False
        if isinstance(expr, ast.UnaryOp):
            return isinstance(expr.op, (ast.USub, ast.UAdd)) and again(expr.operand)
        if isinstance(expr, ast.Subscript):
            return again(expr.value)
        if isinstance(expr, ast.Attribute):
            return expr.attr in ("T", "mT", "real", "imag") and again(expr.value)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return any(again(e) for e in expr.elts)
        if isinstance(expr, ast.IfExp):
            return again(expr.body) or again(expr.orelse)
        if isinstance(expr, ast.Call):
            return self._call(expr, again)
        return False

    def _call(self, call: ast.Call, again) -> bool:
        args = [a for a in call.args if not isinstance(a, ast.Starred)]
        func = call.func
        q = self.index.qualname(func) or ""
        if q.startswith(ARRAY_NAMESPACES):
            tail = q.rsplit(".", 1)[-1]
            if tail in NOT_DIFFERENTIABLE:
                return False
            if tail == "where":
                return any(again(a) for a in args[1:3])
            if tail in FIRST_ONLY:
                return bool(args) and again(args[0])
            return any(again(a) for a in args)
        if isinstance(func, ast.Attribute) and not q and func.attr in METHODS:
            if func.attr == "astype" and args and _integer_dtype(args[0]):
                return False
            return again(func.value) or (func.attr == "dot" and any(again(a) for a in args))
        return False  # a function not followed: no claim


def _integer_dtype(expr: ast.expr) -> bool:
    text = ast.unparse(expr).rsplit(".", 1)[-1].strip("'\"")
    return text in INTEGER_DTYPES
