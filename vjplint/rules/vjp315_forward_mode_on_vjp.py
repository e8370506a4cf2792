from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.crossmodule import is_top_level
from vjplint.facts.forward import FORWARD, linear_fn_applied
from vjplint.jaxapi import PARTIAL
from vjplint.model import CallSite, CustomDerivative
from vjplint.rules.base import Rule
from vjplint.semantic import FUNCTION_TYPES, FunctionNode, constant_value

HESSIAN = ("jax.hessian", "jax._src.api.hessian")
REVERSE = ("jax.grad", "jax.jacrev", "jax._src.api.grad", "jax._src.api.jacrev")
# Wrappers that keep the function's custom_vjp calls visible to the jvp.
PASS_THROUGH = ("jax.jit", "jax.vmap", "jax.pmap", "jax.checkpoint", "jax.remat", "jax.named_call",
                "jax.ad_checkpoint.checkpoint", "jax._src.api.jit", "jax._src.api.vmap")
# Transformations that trace without evaluating: a jvp of a custom_vjp inside them does not raise.
ABSTRACT_ONLY = ("jax.make_jaxpr", "jax.eval_shape")
JVP_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


class ForwardModeOnVjp(Rule):
    """## What it does
    Flags forward-mode differentiation of a `jax.custom_vjp` function of this module:
    `jax.jvp(f, ...)`, `jax.jacfwd(f)` and calling the function returned by
    `jax.linearize(f, ...)`, where `f` is the custom_vjp itself (also through `jit`, `vmap`,
    `checkpoint`, `functools.partial` or a name bound to one of them), or a lambda or function
    that directly calls it with a differentiated argument (an object of a class of this module
    counts as its `__call__` method, `self` bound: `jax.jvp(op, ...)` where `op = Op()`);
    and forward over reverse
    (`jax.hessian(f)`, `jax.jacfwd(jax.grad(f))`, `jax.jvp(jax.grad(f), ...)`) when the
    custom_vjp's fwd or bwd calls a custom_vjp. In a run over several modules, the custom_vjp's
    definition is also flagged when another module applies `jax.jvp`/`jax.jacfwd` to it by name
    (`jax.jvp(mod.f, ...)`) or applies the linear function `jax.linearize(mod.f, ...)` returns;
    the message names that file and line.

    ## Why is this bad?
    A custom_vjp defines only a reverse-mode rule. JAX cannot push tangents forward through it
    and fails at trace time:

        TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function.

    Forward over reverse (`jax.hessian`, `jax.jacfwd(jax.grad(f))`, `jax.jvp` of a gradient)
    differentiates the gradient's computation, i.e. fwd and bwd, not the custom_vjp: it works
    while they compute inline, and fails with the same error as soon as fwd or bwd calls a
    custom_vjp (a fwd written as `return f(x), res`, the common form), which is flagged too.
    Measured exceptions, not flagged: `jax.linearize` of a gradient, and `jax.jvp` of a jitted
    gradient when only fwd calls one (`docs/facts/scripts/hazard_forward_over_reverse.py`).
    Inside `jax.make_jaxpr`/`jax.eval_shape` the jvp is only staged and nothing is raised, so
    those uses are not reported.

    ## Example
    ```python
    jac = jax.jacfwd(my_custom_vjp_fn)(x)
    ```

    ## Use instead
    ```python
    jac = jax.jacrev(my_custom_vjp_fn)(x)
    ```
    or define the derivative with `jax.custom_jvp`, which supports both modes.

    ## Fix safety
    No automatic fix: `jacrev` computes the same Jacobian at a different cost, and `jvp`
    products need a reverse-mode formulation or a custom_jvp.
    """

    CODE = "VJP315"
    NAME = "forward-mode-on-vjp"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

jac = jax.jacfwd(f)(jnp.ones(3))
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

jac = jax.jacrev(f)(jnp.ones(3))
hess = jax.hessian(lambda x: f(x).sum())(jnp.ones(3))   # fwd and bwd compute inline
''']

    def check(self) -> None:
        self._callers: Dict[int, List[Tuple[CustomDerivative, CallSite]]] = {}
        for d in self.model.derivatives:
            if d.kind == "vjp":
                for site in d.call_sites:
                    if site.enclosing is not None:
                        self._callers.setdefault(id(site.enclosing), []).append((d, site))
        external = self.model.facts.external
        if external is None:
            return
        for d in self.model.derivatives:  # forward mode applied to it in another module of the run
            uses = external.forward.get(d.name)
            if d.kind != "vjp" or d.api != "jax" or not uses or not is_top_level(self.model, d.anchor):
                continue
            how, where = uses[0]
            self.report(d.anchor, f"at {where}, {how} pushes tangents through `{d.name}`, a custom_vjp function: JAX "
                                  f"raises TypeError \"can't apply forward-mode autodiff (jvp) to a custom_vjp "
                                  f"function.\". Use reverse mode there (`jax.vjp`, `jax.jacrev`), or give `{d.name}` "
                                  f"a custom_jvp")

    def visit_Call(self, node: ast.Call) -> None:
        q = self.model.index.qualname(node.func)
        if q in HESSIAN and node.args and not self._not_evaluated(node):
            self._check_over_reverse(node.args[0], node.args[0], self._argnums(node),
                                     "`jax.hessian` (jacfwd of jacrev)", ("fwd", "bwd"))
            return
        if q not in FORWARD or not node.args or self._not_evaluated(node):
            return
        name = q.rsplit(".", 1)[1]  # jvp, jacfwd or linearize
        inner = self._reverse_target(node.args[0])
        if inner is not None:
            if name != "linearize":  # measured: linearize(grad(f)) applied works when only fwd calls f
                target, argnums, rev, staged = inner
                # Measured: jvp of jit(grad(f)) works when only fwd calls a custom_vjp (not under vmap).
                roles = ("bwd",) if staged and name == "jvp" else ("fwd", "bwd")
                self._check_over_reverse(node.args[0], target, argnums, f"`jax.{name}` of `jax.{rev}`", roles)
            return
        perturbed = self._argnums(node) if name == "jacfwd" else None
        how = f"`jax.{name}`"
        if name == "linearize":
            applied = linear_fn_applied(self.model, node)
            if applied is None:
                return
            how = f"the linear function from `jax.linearize` (used at line {applied})"
        self._check_target(node.args[0], perturbed, how)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for dec in node.decorator_list:
            target: ast.expr = dec
            argnums: Optional[Tuple[int, ...]] = (0,)
            if isinstance(dec, ast.Call) and self.model.index.qualname(dec.func) in PARTIAL and dec.args:
                target = dec.args[0]
                argnums = self._argnums(dec, positional=False)
            if argnums is not None and self.model.index.qualname(target) == "jax.jacfwd":
                reason = self._calls_vjp(node, argnums, 0, ())
                if reason is not None:
                    self.report(dec, f"`@jax.jacfwd` differentiates `{node.name}` in forward mode, but {reason}: JAX "
                                     f"raises TypeError \"{JVP_ERROR}\". Use `jax.jacrev`, or give the function a "
                                     f"custom_jvp")

    visit_AsyncFunctionDef = visit_FunctionDef

    def _not_evaluated(self, node: ast.AST) -> bool:
        """Inside a function given to `make_jaxpr`/`eval_shape` (traced but never evaluated: the
        error is raised only when the jvp is evaluated or lowered), or a test expecting the error."""
        if self.model.facts.expects_failure(node):
            return True
        for ancestor in self.model.index.ancestors(node):
            if isinstance(ancestor, FUNCTION_TYPES):
                parent = self.model.index.parent(ancestor)
                if (isinstance(parent, ast.Call) and parent.args and parent.args[0] is ancestor
                        and self.model.index.qualname(parent.func) in ABSTRACT_ONLY):
                    return True
                if not isinstance(ancestor, ast.Lambda) and self._passed_to_abstract(ancestor):
                    return True
        return False

    def _passed_to_abstract(self, fn: ast.AST) -> bool:
        """`def g(...)` later used as `jax.make_jaxpr(g)` / `jax.eval_shape(g, ...)` only."""
        name = getattr(fn, "name", None)
        if name is None:
            return False
        scope_node = self.model.index.scope_of(fn).node  # the name index: no walk per function
        uses = [n for n in self.model.index.names(name)
                if isinstance(n.ctx, ast.Load) and self.model.index.inside(n, scope_node)]
        if not uses:
            return False
        for use in uses:
            parent = self.model.index.parent(use)
            if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is use
                    and self.model.index.qualname(parent.func) in ABSTRACT_ONLY):
                return False
        return True

    # -- forward over reverse (hessian, jacfwd(grad(f)), jvp of a gradient) -----------------
    def _reverse_target(self, expr: ast.expr, depth: int = 0,
                        staged: bool = False) -> Optional[Tuple[ast.expr, Optional[Tuple[int, ...]], str, bool]]:
        """(f, argnums, 'grad'|'jacrev', staged by a wrapper) when `expr` is `jax.grad(f)` or
        `jax.jacrev(f)`, also through jit and names bound once to such calls."""
        if depth > 3:
            return None
        call = expr if isinstance(expr, ast.Call) else self._bound_call(expr)
        if call is None or not call.args:
            return None
        q = self.model.index.qualname(call.func)
        if q in PASS_THROUGH:
            return self._reverse_target(call.args[0], depth + 1, True)
        if q in REVERSE:
            return call.args[0], self._argnums(call), q.rsplit(".", 1)[1], staged
        return None

    def _check_over_reverse(self, where: ast.expr, target: ast.expr, argnums: Optional[Tuple[int, ...]], how: str,
                            roles: Tuple[str, ...]) -> None:
        """Forward over reverse differentiates the gradient's computation: fwd (linearized) and bwd.
        It fails only when one of them calls a custom_vjp (measured, hazard_forward_over_reverse.py)."""
        self._reached = None
        reason = self._reason(target, argnums, 0)
        d = self._reached
        if reason is None or d is None:
            return
        inner = self._rule_calling_vjp(d, roles)
        if inner is None:
            return
        self.report(where, f"{how} pushes tangents through the gradient of `{self.quote(target, 40)}`: {reason}, "
                            f"and {inner}, so the forward pass meets a custom_vjp: JAX raises TypeError "
                            f"\"{JVP_ERROR}\". Use `jax.jacrev(jax.jacrev(...))`, compute the value inline in "
                            f"the rule instead of calling a custom_vjp there, or give the function a custom_jvp")

    def _rule_calling_vjp(self, d: CustomDerivative, roles: Tuple[str, ...]) -> Optional[str]:
        """Why a rule of `d` in `roles` runs a custom_vjp (fwd written as `return f(x), res`)."""
        for role, rule in self.model.facts.rules_of(d):
            if rule.node is None or role not in roles:
                continue
            for inner, site in self._callers.get(id(rule.node), []):
                name = rule.name or role
                return (f"its {role} rule `{name}` calls custom_vjp `{inner.name}` (line {site.call.lineno})")
        return None

    # -- what is being differentiated ---------------------------------------------------
    def _check_target(self, expr: ast.expr, argnums: Optional[Tuple[int, ...]], how: str) -> None:
        reason = self._reason(expr, argnums, 0)
        if reason is None:
            return
        fix = "Use `jax.jacrev`" if "jacfwd" in how else "Use reverse mode (`jax.vjp`, `jax.jacrev`)"
        self.report(expr, f"{how} pushes tangents through `{self.quote(expr, 40)}`, but {reason}: JAX raises "
                          f"TypeError \"{JVP_ERROR}\". {fix}, or give the function a custom_jvp")

    def _reason(self, expr: ast.expr, argnums: Optional[Tuple[int, ...]], depth: int, skip: int = 0,
                bound: Sequence[str] = ()) -> Optional[str]:
        """Why differentiating `expr` reaches a custom_vjp; `skip` leading positional parameters
        and the keyword names in `bound` are fixed by functools.partial (not perturbed)."""
        if depth > 4:
            return None
        d = self.model.facts.derivative_named(expr)
        if d is not None:
            if d.kind != "vjp":
                return None
            if argnums is not None and d.nondiff and all(a in d.nondiff for a in argnums):
                return None  # only nondiff positions are perturbed: another error (VJP10x)
            self._reached = d
            return f"`{d.name}` is a custom_vjp function"
        if isinstance(expr, ast.Call) and expr.args:
            q = self.model.index.qualname(expr.func)
            if q in PASS_THROUGH:
                return self._reason(expr.args[0], argnums, depth + 1, skip, bound)
            if q in PARTIAL:
                fixed = len(expr.args) - 1
                shifted = None if argnums is None else tuple(a + fixed for a in argnums)
                return self._reason(expr.args[0], shifted, depth + 1, skip + fixed,
                                    (*bound, *(k.arg for k in expr.keywords if k.arg)))
            return None
        fn = self._function(expr)
        method = self._instance_call(expr) if fn is None else None
        if method is not None:  # a callable object: `__call__` with `self` bound
            return self._calls_vjp(method, None if argnums is None else tuple(a + 1 for a in argnums), skip + 1,
                                   bound)
        if fn is None:
            wrapped = self._bound_call(expr)
            if wrapped is not None and self.model.index.qualname(wrapped.func) in (*PASS_THROUGH, *PARTIAL):
                return self._reason(wrapped, argnums, depth + 1, skip, bound)
            return None
        return self._calls_vjp(fn, argnums, skip, bound)

    def _function(self, expr: ast.expr) -> Optional[FunctionNode]:
        if isinstance(expr, ast.Lambda):
            return expr
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if binding.kind == "def" and all(self.model.index.qualname(dec) in PASS_THROUGH
                                         for dec in binding.node.decorator_list):  # type: ignore[union-attr]
            return binding.node  # type: ignore[return-value]
        if binding.kind == "assign" and isinstance(binding.value, ast.Lambda):
            return binding.value
        return None

    def _instance_call(self, expr: ast.expr) -> Optional[FunctionNode]:
        """`OP = Op()` bound once, `Op` a class of this module with one plain `__call__`: the method
        `jax.jvp(OP, ...)` runs."""
        call = self._bound_call(expr)
        if call is None or not isinstance(call.func, ast.Name):
            return None
        index = self.model.index
        classes = index.lookup(call.func.id, index.scope_of(call))
        if len(classes) != 1 or classes[0].kind != "class":
            return None
        scope = index.scopes.get(classes[0].node)
        methods = scope.bindings.get("__call__", []) if scope is not None else []
        if len(methods) != 1 or methods[0].kind != "def" or getattr(methods[0].node, "decorator_list", None):
            return None
        return methods[0].node  # type: ignore[return-value]

    def _bound_call(self, expr: ast.expr) -> Optional[ast.Call]:
        """The call a name is bound to once (`cube_jit = jax.jit(cube)`), for wrappers."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, ast.Call):
            return bindings[0].value
        return None

    def _calls_vjp(self, fn: FunctionNode, argnums: Optional[Tuple[int, ...]], skip: int,
                   bound: Sequence[str]) -> Optional[str]:
        """Why `fn` hits a custom_vjp with a perturbed argument, when it calls one directly."""
        positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if argnums is None:
            perturbed = {p for p in positional[skip:] if p not in bound}
            if fn.args.vararg is not None:
                perturbed.add(fn.args.vararg.arg)
        else:
            perturbed = {positional[a] for a in argnums if 0 <= a < len(positional)}
        if not perturbed:
            return None
        owner = self.model.index.parent(fn)
        label = "the lambda" if isinstance(fn, ast.Lambda) else \
            f"`{owner.name}.{fn.name}`" if isinstance(owner, ast.ClassDef) else f"`{fn.name}`"
        for d, site in self._callers.get(id(fn), []):
            if d.primal is fn:
                continue
            for position, arg in enumerate(site.call.args):
                if isinstance(arg, ast.Starred) or position in d.nondiff:
                    continue
                if self._depends_on(arg, fn, perturbed):
                    self._reached = d
                    return (f"{label} calls custom_vjp `{d.name}` (line {site.call.lineno}) with "
                            f"`{self.quote(arg, 30)}`, which carries the tangent")
            for keyword in site.call.keywords:
                if keyword.arg is not None and self._depends_on(keyword.value, fn, perturbed):
                    self._reached = d
                    return (f"{label} calls custom_vjp `{d.name}` (line {site.call.lineno}) with "
                            f"`{self.quote(keyword.value, 30)}`, which carries the tangent")
        return None

    def _depends_on(self, expr: ast.expr, fn: FunctionNode, perturbed: Set[str], depth: int = 0) -> bool:
        """Whether `expr` is computed from a perturbed parameter of `fn` (not through stop_gradient)."""
        if depth > 5:
            return False
        scope = self.model.index.scopes.get(fn)
        for node in _names_outside_stop_gradient(self.model, expr):
            bindings = scope.bindings.get(node.id, []) if scope is not None else []
            for binding in bindings:
                if binding.kind == "param" and node.id in perturbed:
                    return True
                if (binding.kind == "assign" and binding.value is not None
                        and self._depends_on(binding.value, fn, perturbed, depth + 1)):
                    return True
        return False

    def _argnums(self, call: ast.Call, positional: bool = True) -> Optional[Tuple[int, ...]]:
        """jacfwd's `argnums` (default 0); None when it is not a constant."""
        node = next((k.value for k in call.keywords if k.arg == "argnums"), None)
        if node is None and positional and len(call.args) > 1:
            node = call.args[1]
        if node is None:
            return (0,)
        value = constant_value(self.model.index, node)
        if type(value) is int:
            return (value,)
        if isinstance(value, (tuple, list)) and all(type(v) is int for v in value):
            return tuple(value)
        return None


def _names_outside_stop_gradient(model, expr: ast.expr) -> List[ast.Name]:
    found: List[ast.Name] = []
    stack: List[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and model.index.qualname(node.func) in ("jax.lax.stop_gradient",):
            continue
        if isinstance(node, FUNCTION_TYPES):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found
