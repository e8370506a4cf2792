from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.crossmodule import is_top_level
from vjplint.facts.forward import FORWARD, linear_fn_applied
from vjplint.model.jaxapi import PARTIAL
from vjplint.model.file_model import CallSite, CustomDerivative
from vjplint.rules.base import Rule
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, constant_value, named_function

HESSIAN = ("jax.hessian", "jax._src.api.hessian")
REVERSE = ("jax.grad", "jax.jacrev", "jax._src.api.grad", "jax._src.api.jacrev")
# Wrappers that keep the function's custom_vjp calls visible to the jvp.
PASS_THROUGH = ("jax.jit", "jax.vmap", "jax.pmap", "jax.checkpoint", "jax.remat", "jax.named_call",
                "jax.ad_checkpoint.checkpoint", "jax._src.api.jit", "jax._src.api.vmap")
# Transformations that trace without evaluating: a jvp of a custom_vjp inside them does not raise.
ABSTRACT_ONLY = ("jax.make_jaxpr", "jax.eval_shape")
JVP_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."
# Library functions that run a custom_vjp on their inputs, what makes them one, and whether its
# fwd and bwd call it again (so forward over reverse fails too). Measured on JAX 0.10.2,
# docs/facts/scripts/library_custom_vjp.py: a tangent reaching `y0`, `t`, the extra arguments or a
# value the dynamics close over (odeint closure-converts them into inputs) raises.
LIBRARY_VJP: Dict[str, Tuple[str, bool]] = {
    "jax.experimental.ode.odeint": ("`odeint` (jax.experimental.ode) integrates with `_odeint`, a custom_vjp whose "
                                    "inputs are `y0`, `t`, the extra arguments and what the dynamics close over",
                                    True),
}


class _Library:
    """What `_reached` holds when the custom_vjp reached is a library function's."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname
        self.name = qualname.rsplit(".", 1)[-1]


class ForwardModeOnVjp(Rule):
    """## What it does
    Flags forward-mode differentiation of a `jax.custom_vjp` function of this module:
    `jax.jvp(f, ...)`, `jax.jacfwd(f)` and calling the function returned by
    `jax.linearize(f, ...)`, where `f` is the custom_vjp itself (also through `jit`, `vmap`,
    `checkpoint`, `functools.partial` or a name bound to one of them), a lambda or function
    that calls it with a differentiated argument (directly, or through a function of the module
    or an object), or an instance of a class of the module whose `__call__` does (an equinox
    Module, an op that creates its custom_vjp in `__init__`); and forward over reverse
    (`jax.hessian(f)`, `jax.jacfwd(jax.grad(f))`, `jax.jvp(jax.grad(f), ...)`) when the
    custom_vjp's fwd or bwd calls a custom_vjp. In a run over several modules, the custom_vjp's
    definition is also flagged when another module applies `jax.jvp`/`jax.jacfwd` to it by name
    (`jax.jvp(mod.f, ...)`) or applies the linear function `jax.linearize(mod.f, ...)` returns;
    the message names that file and line. Library functions that are custom_vjps count too:
    `jax.experimental.ode.odeint`, reached by a tangent through `y0`, `t`, its extra arguments
    or a value its dynamics close over (its fwd and bwd call it again, so `jax.hessian` fails
    as well; docs/facts/scripts/library_custom_vjp.py).

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
    TRIGGERS = (b"custom_vjp", b"odeint")

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
        if isinstance(d, _Library):
            return "its fwd and bwd rules call it again" if LIBRARY_VJP[d.qualname][1] else None
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
        if fn is None:
            method = self._instance_call(expr)
            if method is not None:  # an object whose `__call__` runs the custom_vjp: `self` is not perturbed
                cls, call = method
                shifted = None if argnums is None else tuple(a + 1 for a in argnums)
                inner = self._calls_vjp(call, shifted, skip + 1, bound, label=f"`{cls.name}.__call__`")
                return None if inner is None else f"`{self.quote(expr, 30)}` is an instance of `{cls.name}` and {inner}"
            wrapped = self._bound_call(expr)
            if wrapped is not None and self.model.index.qualname(wrapped.func) in (*PASS_THROUGH, *PARTIAL):
                return self._reason(wrapped, argnums, depth + 1, skip, bound)
            return None
        return self._calls_vjp(fn, argnums, skip, bound)

    def _function(self, expr: ast.expr) -> Optional[FunctionNode]:
        """A lambda, or the def or lambda a name is bound to once (a def only when its decorators
        all pass tangents through: `@jax.jit`)."""
        fn = named_function(self.model.index, expr)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and not all(
                self.model.index.qualname(dec) in PASS_THROUGH for dec in fn.decorator_list):
            return None
        return fn

    def _bound_call(self, expr: ast.expr) -> Optional[ast.Call]:
        """The call a name is bound to once (`cube_jit = jax.jit(cube)`), for wrappers."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, ast.Call):
            return bindings[0].value
        return None

    def _instance_call(self, expr: ast.expr) -> Optional[Tuple[ast.ClassDef, ast.FunctionDef]]:
        """(class, `__call__`) when `expr` is an instance of a class of this module (an equinox
        Module, a plain class with `__call__`)."""
        values = self.model.facts.values()
        cls = values.instance_class(expr)
        if cls is None:
            return None
        call = values.method_of(cls, "__call__")
        return None if call is None else (cls, call)

    def _calls_vjp(self, fn: FunctionNode, argnums: Optional[Tuple[int, ...]], skip: int,
                   bound: Sequence[str], depth: int = 0, label: str = "") -> Optional[str]:
        """Why `fn` hits a custom_vjp with a perturbed argument: it calls one directly, or calls a
        function or callable object of this module that does (two levels at most)."""
        positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if argnums is None:
            perturbed = {p for p in positional[skip:] if p not in bound}
            if fn.args.vararg is not None:
                perturbed.add(fn.args.vararg.arg)
        else:
            perturbed = {positional[a] for a in argnums if 0 <= a < len(positional)}
        if not perturbed:
            return None
        label = label or ("the lambda" if isinstance(fn, ast.Lambda) else f"`{fn.name}`")
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
        library = self._calls_library(fn, perturbed, label)
        if library is not None:
            return library
        return None if depth >= 2 else self._calls_through(fn, perturbed, label, depth)

    def _calls_library(self, fn: FunctionNode, perturbed: Set[str], label: str) -> Optional[str]:
        """A call in `fn` of a library function that runs a custom_vjp (LIBRARY_VJP) on a value
        carrying the tangent, a lambda closing over one included."""
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            q = self.model.index.qualname(node.func)
            if q not in LIBRARY_VJP:
                continue
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                value = arg.value if isinstance(arg, ast.Starred) else arg
                if self._carries(value, fn, perturbed):
                    self._reached = _Library(q)  # type: ignore[assignment]
                    return (f"{label} calls `{self.quote(node.func, 30)}` (line {node.lineno}) with "
                            f"`{self.quote(value, 30)}`, which carries the tangent, and {LIBRARY_VJP[q][0]}")
        return None

    def _carries(self, value: ast.expr, fn: FunctionNode, perturbed: Set[str]) -> bool:
        if not isinstance(value, ast.Lambda):
            return self._depends_on(value, fn, perturbed)
        own = {a.arg for a in (*value.args.posonlyargs, *value.args.args, *value.args.kwonlyargs)}
        own |= {a.arg for a in (value.args.vararg, value.args.kwarg) if a is not None}
        return self._depends_on(value.body, fn, perturbed - own)

    def _calls_through(self, fn: FunctionNode, perturbed: Set[str], label: str, depth: int) -> Optional[str]:
        """A call in `fn` of a function (`def`, lambda) or instance of this module that passes a
        perturbed value on to a custom_vjp: `jax.jacfwd(lambda v: model(v))`."""
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            callee = self._callee(node.func)
            if callee is None:
                continue
            target, offset, name, instance = callee
            params = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
            positions: List[int] = []
            carrier: Optional[ast.expr] = None
            for position, arg in enumerate(node.args):
                if isinstance(arg, ast.Starred):
                    break  # later positions are unknown
                if self._depends_on(arg, fn, perturbed):
                    positions.append(position + offset)
                    carrier = carrier or arg
            for keyword in node.keywords:
                if keyword.arg in params and self._depends_on(keyword.value, fn, perturbed):
                    positions.append(params.index(keyword.arg))
                    carrier = carrier or keyword.value
            if carrier is None:
                continue
            inner = self._calls_vjp(target, tuple(positions), offset, (), depth + 1, name)
            if inner is not None:
                return (f"{label} calls `{self.quote(node.func, 30)}` (line {node.lineno}){instance} with "
                        f"`{self.quote(carrier, 30)}`, which carries the tangent, and {inner}")
        return None

    def _callee(self, func: ast.expr) -> Optional[Tuple[FunctionNode, int, str, str]]:
        """(function, leading parameters not passed, its label, what the callee is) for a call
        of a function of this module or of an instance whose class has `__call__`."""
        if self.model.facts.derivative_named(func) is not None:
            return None  # a custom derivative itself: a direct call, seen above
        fn = self._function(func)
        if fn is not None:
            label = "the lambda" if isinstance(fn, ast.Lambda) else f"`{fn.name}`"
            return fn, 0, label, ""
        method = self._instance_call(func)
        if method is not None:
            cls, call = method
            return call, 1, f"`{cls.name}.__call__`", f", an instance of `{cls.name}`,"
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
