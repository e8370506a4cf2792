"""Checkify staged around a custom derivative: where `jax.experimental.checkify.checkify` meets a
staging wrapper (jit, checkpoint) and a `jax.custom_vjp`/`custom_jvp` of the module with a check
before or in it, a composition that fails when differentiated (jax-ml/jax#35871). VJP608 reports
what `stagings` finds; the evidence says which check checkify puts where."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Set, Tuple, Union

from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.jaxapi import ARRAY_NAMESPACES, PARTIAL
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode
from vjplint.syntax.walk import walk

CHECKIFY = "jax.experimental.checkify.checkify"
CHECKS = ("jax.experimental.checkify.check", "jax.experimental.checkify.debug_check")
_SETS = "jax.experimental.checkify."
# The error sets of jax.experimental.checkify (JAX 0.10.2's definitions), by the checks they enable.
ERROR_SETS = {
    f"{_SETS}user_checks": frozenset({"user"}), f"{_SETS}nan_checks": frozenset({"nan"}),
    f"{_SETS}index_checks": frozenset({"index"}), f"{_SETS}div_checks": frozenset({"div"}),
    f"{_SETS}float_checks": frozenset({"nan", "div"}),
    f"{_SETS}automatic_checks": frozenset({"nan", "div", "index"}),
    f"{_SETS}all_checks": frozenset({"nan", "div", "index", "user"}),
}
# Wrappers that stage the function they wrap (its computation becomes a jaxpr checkify rewrites).
STAGING = ("jax.jit", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "jax._src.api.jit")
# Wrappers between checkify and an outer jit that keep the composition (measured: jit(vmap(checkify(f)))).
BETWEEN = ("jax.vmap", "jax._src.api.vmap")
# Control flow whose branches or body checkify rewrites as a jaxpr (measured: cond, scan), by the
# positions of the functions it traces.
CONTROL_FLOW = {"jax.lax.cond": (1, 2), "jax.lax.scan": (0,)}
DIFFERENTIATION = ("jax.grad", "jax.value_and_grad", "jax.vjp", "jax.jacrev", "jax.hessian", "jax.jvp",
                   "jax.jacfwd", "jax.linearize")
# jnp/lax/nn functions that bind a primitive of checkify's NaN list (acos ... tanh, add, mul, sub,
# dot_general, reduce_sum, ...): under nan_checks each gets a check.
NAN_FUNCTIONS = frozenset("""
sin cos tan arcsin arccos arctan arcsinh arccosh arctanh arctan2 sinh cosh tanh exp exp2 expm1 log log1p log2
log10 logaddexp logaddexp2 sqrt rsqrt cbrt power pow square add subtract multiply divide true_divide sum mean
prod dot vdot matmul einsum tensordot inner outer var std average cumsum cumprod erf erfc erf_inv lgamma digamma
softplus sigmoid log_sigmoid softmax log_softmax logsumexp gelu silu swish mul sub div integer_pow
dot_general logistic norm
""".split())
NAN_METHODS = frozenset({"sum", "mean", "prod", "dot", "var", "std", "cumsum", "cumprod"})
# Functions that bind div_p (a division-by-zero check under div_checks).
DIV_FUNCTIONS = frozenset({"divide", "true_divide", "mean", "var", "std", "average", "div"})
DIV_METHODS = frozenset({"mean", "var", "std"})
# Functions that bind gather/dynamic_slice/scatter (a bounds check under index_checks).
INDEX_FUNCTIONS = frozenset({"take", "take_along_axis", "dynamic_slice", "dynamic_slice_in_dim",
                             "dynamic_index_in_dim", "dynamic_update_slice", "gather", "scatter", "scatter_add"})
NAN_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.Mod)
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype"})


@dataclass
class Hit:
    d: CustomDerivative
    evidence: str  # "`jnp.log(x)` (line 9) can produce a NaN, so nan_checks checks it"
    where: str  # "inside its primal" / "before the call"


# -- what `stagings` returns, in the order VJP608 reports them -----------------------------------
@dataclass
class StagedAround:
    """`jax.jit(checkify(target))` (or checkpoint, vmap between, a name jitted later): `outer`."""

    outer: ast.Call
    target: ast.expr
    hit: Hit


@dataclass
class CheckifiesJitted:
    """`checkify(jax.jit(f))`, or checkify of a function calling jitted code: `call`."""

    call: ast.Call
    hit: Hit


@dataclass
class DecoratedStaged:
    """`@checkify.checkify` (`dec`) on `fn` under a staging decorator `above`, or with one below
    it (`staged_below`), or around a function that runs jitted code (neither)."""

    fn: ast.FunctionDef
    dec: ast.expr
    above: Optional[ast.expr]
    staged_below: bool
    hit: Hit


@dataclass
class StagedLater:
    """`jax.jit(fn)` (`outer`) of a function decorated with checkify (`dec`)."""

    outer: ast.Call
    fn: ast.FunctionDef
    dec: ast.expr
    hit: Hit


@dataclass
class DifferentiatedJitted:
    """`jax.grad(...)` (`call`) differentiates a jitted function (`jitted`) whose call `use` runs
    the function checkify applied at `site`. `via` is the differentiated argument itself when it
    is the jitted function, else the call of the jitted function in its body."""

    call: ast.Call
    via: ast.AST
    jitted: FunctionNode
    use: ast.Call
    site: ast.AST
    hit: Hit


Staging = Union[StagedAround, CheckifiesJitted, DecoratedStaged, StagedLater, DifferentiatedJitted]


class Checkify:
    """The staged checkify compositions of one module."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.found: List[Staging] = []

    def stagings(self) -> List[Staging]:
        """Every staged checkify composition reaching a custom derivative with a check, in the
        module's order of checkify calls, then of functions decorated with checkify."""
        if not any(d.api == "jax" for d in self.model.derivatives) or not self.model.holds("checkify"):
            return []  # a text test first: most files never checkify
        self.found = []
        index = self.model.index
        for node in index.of_type(ast.Call):
            if node.args and index.qualname(node.func) == CHECKIFY:  # type: ignore[attr-defined]
                self._checkify_call(node)  # type: ignore[arg-type]
        for fn in index.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            self._checkify_decorated(fn)  # type: ignore[arg-type]
        return self.found

    # -- where checkify is applied ---------------------------------------------------------------
    def _checkify_call(self, call: ast.Call) -> None:
        errors = self._errors(call)
        if errors is None or self.model.facts.expects_failure(call):
            return
        target = call.args[0]
        if self._computes_gradients(target):
            return  # a training step: what it returns is used, not differentiated again
        outer = self._staging_around(call)
        if outer is not None:
            hit = self._reach(target, errors, True, None, 0, set())
            if hit is not None:
                self.found.append(StagedAround(outer, target, hit))
            return
        hit = self._reach(target, errors, False, None, 0, set())
        if hit is not None:
            self.found.append(CheckifiesJitted(call, hit))
            return
        parent = self.model.index.parent(call)
        if isinstance(parent, ast.Call) and parent.func is call:  # `checkify(f)(x)` inside a jitted function
            self._called_in_jit(parent, call, target, errors)
        for use in self._uses(call):
            self._called_in_jit(use, call, target, errors)

    def _checkify_decorated(self, fn: ast.FunctionDef) -> None:
        decorators = fn.decorator_list
        for position, dec in enumerate(decorators):
            errors = self._decorator_errors(dec)
            if errors is None:
                continue
            if self._differentiates_inside(fn):
                return
            staged_below = any(self.model.index.qualname(d) in STAGING for d in decorators[position + 1:])
            above = [d for d in decorators[:position] if self.model.index.qualname(d) in STAGING]
            if above:
                hit = self._walk(fn, errors, True, None, 0, set())
                if hit is not None:
                    self.found.append(DecoratedStaged(fn, dec, above[-1], staged_below, hit))
                return
            hit = self._walk(fn, errors, staged_below, None, 0, set())
            if hit is not None:
                self.found.append(DecoratedStaged(fn, dec, None, staged_below, hit))
                return
            for use in self._names_of_def(fn):
                outer = self.model.index.parent(use)
                if (isinstance(outer, ast.Call) and outer.args and outer.args[0] is use
                        and self.model.index.qualname(outer.func) in STAGING):  # `jax.jit(fn)` later
                    hit = self._walk(fn, errors, True, None, 0, set())
                    if hit is not None:
                        self.found.append(StagedLater(outer, fn, dec, hit))
                        return
            for use in self._names_of_def(fn):
                outer = self.model.index.parent(use)
                if isinstance(outer, ast.Call) and outer.func is use:
                    self._called_in_jit(outer, dec, fn, errors)
            return

    def _computes_gradients(self, target: ast.expr) -> bool:
        """`checkify(train_step)`: the checkified function (through jit/partial) takes a gradient itself."""
        for _ in range(4):
            if isinstance(target, ast.Call) and target.args and self.model.index.qualname(target.func) in (
                    *STAGING, *PARTIAL, *BETWEEN):
                target = target.args[0]
                continue
            bound = self._bound_value(target)
            if isinstance(bound, ast.Call):
                target = bound
                continue
            break
        resolved = self._function(target)
        return resolved is not None and self._differentiates_inside(resolved[0])

    def _differentiates_inside(self, fn: FunctionNode) -> bool:
        return any(isinstance(n, ast.Call) and self.model.index.qualname(n.func) in DIFFERENTIATION
                   for n in self.model.facts.own_nodes(fn))

    def _decorator_errors(self, dec: ast.expr) -> Optional[FrozenSet[str]]:
        """The errors set of `@checkify.checkify` / `@partial(checkify.checkify, errors=...)`; None otherwise."""
        q = self.model.index.qualname(dec)
        if q == CHECKIFY:
            return ERROR_SETS[f"{_SETS}user_checks"]
        if (isinstance(dec, ast.Call) and dec.args and self.model.index.qualname(dec.func) in PARTIAL
                and self.model.index.qualname(dec.args[0]) == CHECKIFY):
            errors = next((k.value for k in dec.keywords if k.arg == "errors"), None)
            return ERROR_SETS[f"{_SETS}user_checks"] if errors is None else self._error_set(errors, 0)
        return None

    def _errors(self, call: ast.Call) -> Optional[FrozenSet[str]]:
        expr = next((k.value for k in call.keywords if k.arg == "errors"), None)
        if expr is None and len(call.args) > 1:
            expr = call.args[1]
        return ERROR_SETS[f"{_SETS}user_checks"] if expr is None else self._error_set(expr, 0)

    def _error_set(self, expr: ast.expr, depth: int) -> Optional[FrozenSet[str]]:
        """`checkify.float_checks | checkify.user_checks`, `all_checks - float_checks`, a name bound once to one."""
        if depth > 4:
            return None
        q = self.model.index.qualname(expr)
        if q in ERROR_SETS:
            return ERROR_SETS[q]
        if isinstance(expr, ast.BinOp):
            left, right = self._error_set(expr.left, depth + 1), self._error_set(expr.right, depth + 1)
            if left is None or right is None:
                return None
            if isinstance(expr.op, ast.BitOr):
                return left | right
            if isinstance(expr.op, ast.Sub):
                return left - right
            if isinstance(expr.op, ast.BitAnd):
                return left & right
            return None
        bound = self._bound_value(expr)
        return None if bound is None else self._error_set(bound, depth + 1)

    def _staging_around(self, call: ast.Call) -> Optional[ast.Call]:
        """`jax.jit(checkify(f))`, `jax.checkpoint(...)`, `jax.jit(jax.vmap(checkify(f)))`, or a
        name bound to the checkify call and later given to `jax.jit`."""
        child: ast.AST = call
        parent = self.model.index.parent(call)
        while isinstance(parent, ast.Call) and parent.args and parent.args[0] is child:
            q = self.model.index.qualname(parent.func)
            if q in STAGING:
                return parent
            if q not in BETWEEN:
                return None
            child, parent = parent, self.model.index.parent(parent)
        for use in self._names_of(call):
            outer = self.model.index.parent(use)
            if (isinstance(outer, ast.Call) and outer.args and outer.args[0] is use
                    and self.model.index.qualname(outer.func) in STAGING):
                return outer
        return None

    def _names_of(self, value: ast.AST) -> List[ast.Name]:
        """Loads of the name `value` is assigned to (`checked = checkify(f)`), resolving to that binding."""
        index = self.model.index
        parent = index.parent(value)
        if not (isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name)):
            return []
        name = parent.targets[0].id
        found = []
        for node in index.names(name):
            if isinstance(node.ctx, ast.Load) and any(b.node is parent for b in index.lookup(name, index.scope_of(node))):
                found.append(node)
        return found

    def _uses(self, call: ast.Call) -> List[ast.Call]:
        """Calls of the name the checkify call is bound to."""
        found = []
        for name in self._names_of(call):
            parent = self.model.index.parent(name)
            if isinstance(parent, ast.Call) and parent.func is name:
                found.append(parent)
        return found

    def _names_of_def(self, fn: ast.FunctionDef) -> List[ast.Name]:
        """Loads of `fn`'s name that resolve to its def."""
        index = self.model.index
        return [node for node in index.names(fn.name)
                if isinstance(node.ctx, ast.Load) and any(b.node is fn for b in index.lookup(fn.name, index.scope_of(node)))]

    # -- what the checkified function reaches -------------------------------------------------------
    def _reach(self, expr: ast.expr, errors: FrozenSet[str], staged: bool, prior: Optional[str], depth: int,
               seen: Set[ast.AST]) -> Optional[Hit]:
        """A custom derivative reached by calling `expr` under checkify, staged, with a check before or in it."""
        if depth > 4:
            return None
        d = self.model.facts.derivative_named(expr)
        if d is not None:
            return self._derivative_hit(d, errors, staged, prior, seen) if d.api == "jax" else None
        index = self.model.index
        if isinstance(expr, ast.Call) and expr.args:
            q = index.qualname(expr.func)
            if q in STAGING:
                return self._reach(expr.args[0], errors, True, prior, depth + 1, seen)
            if q in PARTIAL or q in BETWEEN:
                return self._reach(expr.args[0], errors, staged, prior, depth + 1, seen)
            return None
        resolved = self._function(expr)
        if resolved is not None:
            fn, decorated = resolved
            return self._walk(fn, errors, staged or decorated, prior, depth + 1, seen)
        bound = self._bound_value(expr)
        if isinstance(bound, ast.Call) and index.qualname(bound.func) in (*STAGING, *PARTIAL, *BETWEEN):
            return self._reach(bound, errors, staged, prior, depth + 1, seen)
        return None

    def _walk(self, fn: FunctionNode, errors: FrozenSet[str], staged: bool, prior: Optional[str], depth: int,
              seen: Set[ast.AST]) -> Optional[Hit]:
        """The calls of `fn`'s body in source order: a custom derivative, or a function of the module."""
        if fn in seen or depth > 4:
            return None
        seen = seen | {fn}
        calls = sorted((n for n in self.model.facts.own_nodes(fn) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset))
        for call in calls:
            own = None if prior else self._evidence_before(fn, call, errors)
            before = prior or (own and f"{own}, before `{self.model.quote(call, 30)}` (line {call.lineno})")
            d = self.model.facts.derivative_named(call.func)
            branches = CONTROL_FLOW.get(self.model.index.qualname(call.func) or "", ())
            if branches:
                for position in branches:
                    if position < len(call.args):
                        hit = self._reach(call.args[position], errors, True, before, depth + 1, seen)
                        if hit is not None:
                            return hit
                continue
            if d is not None:
                if d.api != "jax":
                    continue
                hit = self._derivative_hit(d, errors, staged, before, seen)
            else:
                hit = self._reach(call.func, errors, staged, before, depth + 1, seen)
            if hit is not None:
                return hit
        return None

    def _derivative_hit(self, d: CustomDerivative, errors: FrozenSet[str], staged: bool, prior: Optional[str],
                        seen: Set[ast.AST]) -> Optional[Hit]:
        if not staged or d.kind not in ("vjp", "jvp"):
            return None
        if d.primal is not None and d.primal not in seen:
            inside = self._evidence_in(d.primal, errors, 0, seen)
            if inside is not None:
                return Hit(d, inside, "inside its primal")
        if d.kind == "vjp" and prior is not None:
            return Hit(d, prior, "before the call")
        return None

    def _function(self, expr: ast.expr) -> Optional[Tuple[FunctionNode, bool]]:
        """(function, staged by its decorators) for a lambda or a name bound once to a def or lambda
        whose decorators are staging wrappers (or none)."""
        if isinstance(expr, ast.Lambda):
            return expr, False
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if binding.kind == "def" and isinstance(binding.node, FUNCTION_TYPES):
            decorators = [self.model.index.qualname(d) for d in binding.node.decorator_list]  # type: ignore[union-attr]
            if all(q in STAGING for q in decorators):
                return binding.node, bool(decorators)  # type: ignore[return-value]
            return None
        if binding.kind == "assign" and isinstance(binding.value, ast.Lambda):
            return binding.value, False
        return None

    def _bound_value(self, expr: ast.expr) -> Optional[ast.expr]:
        """The value a name is bound to once by an assignment."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) == 1 and bindings[0].kind == "assign":
            return bindings[0].value
        return None

    # -- what checkify checks ----------------------------------------------------------------------
    def _evidence_in(self, fn: FunctionNode, errors: FrozenSet[str], depth: int, seen: Set[ast.AST]) -> Optional[str]:
        """The first check `errors` puts in `fn`'s body (or in a function of the module it calls)."""
        nodes = sorted((n for n in self.model.facts.own_nodes(fn) if hasattr(n, "lineno")),
                       key=_innermost_first)
        for node in nodes:
            found = self._evidence(node, errors)
            if found is not None:
                return found
        if depth < 2:
            for node in nodes:
                if isinstance(node, ast.Call) and self.model.facts.derivative_named(node.func) is None:
                    resolved = self._function(node.func)
                    if resolved is not None and resolved[0] not in seen and resolved[0] is not fn:
                        found = self._evidence_in(resolved[0], errors, depth + 1, seen | {fn})
                        if found is not None:
                            return found
        return None

    def _evidence_before(self, fn: FunctionNode, call: ast.Call, errors: FrozenSet[str]) -> Optional[str]:
        """A check `errors` puts in `fn` before `call` runs (earlier in the body, or in its arguments)."""
        start = (call.lineno, call.col_offset)
        arguments = [*call.args, *(k.value for k in call.keywords)]
        index = self.model.index
        nodes = sorted((n for n in self.model.facts.own_nodes(fn) if hasattr(n, "lineno")), key=_innermost_first)
        for node in nodes:
            earlier = (node.lineno, node.col_offset) < start and not index.inside(call, node)
            if not earlier and not any(index.inside(node, a) for a in arguments):
                continue
            found = self._evidence(node, errors)
            if found is not None:
                return found
        return None

    def _evidence(self, node: ast.AST, errors: FrozenSet[str]) -> Optional[str]:
        """Why checkify (with `errors`) puts a check at `node`; None when it does not (or may not)."""
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call):
            q = self.model.index.qualname(node.func) or ""
            if "user" in errors and q in CHECKS:
                return f"`{self.model.quote(node, 40)}` (line {line}) is a user check"
            last = q.rsplit(".", 1)[-1]
            if q.startswith(ARRAY_NAMESPACES):
                if "nan" in errors and last in NAN_FUNCTIONS:
                    return f"`{self.model.quote(node, 40)}` (line {line}) can produce a NaN, so the NaN check covers it"
                if "div" in errors and last in DIV_FUNCTIONS:
                    return f"`{self.model.quote(node, 40)}` (line {line}) divides, so the division-by-zero check covers it"
                if "index" in errors and last in INDEX_FUNCTIONS:
                    return f"`{self.model.quote(node, 40)}` (line {line}) indexes, so the out-of-bounds check covers it"
            elif not q and isinstance(node.func, ast.Attribute):
                method = node.func.attr
                if "nan" in errors and method in NAN_METHODS:
                    return f"`{self.model.quote(node, 40)}` (line {line}) can produce a NaN, so the NaN check covers it"
                if "div" in errors and method in DIV_METHODS:
                    return f"`{self.model.quote(node, 40)}` (line {line}) divides, so the division-by-zero check covers it"
            return None
        if isinstance(node, (ast.BinOp, ast.AugAssign)):
            left = node.left if isinstance(node, ast.BinOp) else node.target
            right = node.right if isinstance(node, ast.BinOp) else node.value
            if self._static(left, 0) and self._static(right, 0):
                return None  # shape arithmetic, constants: no primitive
            if "nan" in errors and isinstance(node.op, NAN_OPS):
                return f"`{self.model.quote(node, 40)}` (line {line}) can produce a NaN, so the NaN check covers it"
            if "div" in errors and isinstance(node.op, ast.Div):
                return f"`{self.model.quote(node, 40)}` (line {line}) divides, so the division-by-zero check covers it"
            return None
        if isinstance(node, ast.Subscript) and "index" in errors:
            at = isinstance(node.value, ast.Attribute) and node.value.attr == "at"
            if at or any(isinstance(n, ast.Call) for n in walk(node.slice)):
                return f"`{self.model.quote(node, 40)}` (line {line}) indexes, so the out-of-bounds check covers it"
        return None

    def _static(self, expr: ast.expr, depth: int) -> bool:
        """A Python value at trace time: a constant, `x.shape[0]`, `len(x)`, arithmetic of those."""
        if depth > 4:
            return False
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, ast.Attribute):
            return expr.attr in STATIC_ATTRIBUTES
        if isinstance(expr, ast.Subscript):
            return self._static(expr.value, depth + 1)
        if isinstance(expr, ast.Call):
            return self.model.index.qualname(expr.func) in ("builtins.len", "builtins.int")
        if isinstance(expr, ast.BinOp):
            return self._static(expr.left, depth + 1) and self._static(expr.right, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self._static(expr.operand, depth + 1)
        bound = self._bound_value(expr)
        return bound is not None and self._static(bound, depth + 1)

    # -- a jitted function calling the checkified function ------------------------------------------
    def _called_in_jit(self, use: ast.Call, site: ast.AST, target: ast.AST, errors: FrozenSet[str]) -> None:
        """`@jax.jit def step(x): err, y = checked(x)` (or `jax.jit(lambda x: checkify(f)(x))`):
        reported where `step`, or a function calling it, is differentiated."""
        index = self.model.index
        jitted = index.enclosing_function(use)
        if jitted is None:
            return
        references = self._jit_references(jitted)
        if references is None:
            return
        prior = self._evidence_before(jitted, use, errors)
        if isinstance(target, FUNCTION_TYPES):
            hit = self._walk(target, errors, True, prior, 0, set())  # type: ignore[arg-type]
        else:
            hit = self._reach(target, errors, True, prior, 0, set())  # type: ignore[arg-type]
        if hit is None:
            return
        for call in self.model.facts.transform_calls():
            if index.qualname(call.func) not in DIFFERENTIATION or self.model.facts.expects_failure(call):
                continue
            via = self._differentiates(call.args[0], jitted, references)
            if via is None:
                continue
            self.found.append(DifferentiatedJitted(call, via, jitted, use, site, hit))
            return

    def _jit_references(self, fn: FunctionNode) -> Optional[List[ast.AST]]:
        """The nodes that stand for the jitted `fn`: its def (decorated with jit) or the `jax.jit(fn)`
        calls; None when `fn` is not jitted."""
        index = self.model.index
        refs: List[ast.AST] = []
        if not isinstance(fn, ast.Lambda) and any(index.qualname(d) in STAGING for d in fn.decorator_list):
            refs.append(fn)
        parent = index.parent(fn)
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is fn and index.qualname(parent.func) in STAGING:
            refs.append(parent)
        if not isinstance(fn, ast.Lambda):
            for node in index.names(fn.name):
                outer = index.parent(node)
                if (isinstance(node.ctx, ast.Load) and isinstance(outer, ast.Call) and outer.args
                        and outer.args[0] is node and index.qualname(outer.func) in STAGING
                        and any(b.node is fn for b in index.lookup(fn.name, index.scope_of(node)))):
                    refs.append(outer)
        return refs or None

    def _is_reference(self, expr: ast.expr, references: List[ast.AST]) -> bool:
        if any(expr is r for r in references):
            return True
        if isinstance(expr, ast.Name):
            for binding in self.model.index.lookup(expr.id, self.model.index.scope_of(expr)):
                if any(binding.node is r or binding.value is r for r in references):
                    return True
        return False

    def _differentiates(self, arg: ast.expr, jitted: FunctionNode, references: List[ast.AST]) -> Optional[ast.AST]:
        """How differentiating `arg` runs the jitted function: it is the jitted function (`arg`
        returned), or a function whose body calls it (that call returned)."""
        if self._is_reference(arg, references):
            return arg
        resolved = self._function(arg)
        if resolved is None or resolved[0] is jitted:
            return None
        for node in self.model.facts.own_nodes(resolved[0]):
            if isinstance(node, ast.Call) and self._is_reference(node.func, references):
                return node
        return None


def _innermost_first(node: ast.AST) -> Tuple[int, int, int, int]:
    """Source order; of nodes starting at the same place, the smaller first (`jnp.log(x)` before `jnp.log(x) - 1`)."""
    return (node.lineno, node.col_offset, getattr(node, "end_lineno", 0) or 0,  # type: ignore[attr-defined]
            getattr(node, "end_col_offset", 0) or 0)
