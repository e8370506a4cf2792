"""Forward mode: where `jax.linearize`'s linear function is applied (a call of it is a jvp), and
(`ForwardMode`) how a function differentiated in forward mode reaches a custom_vjp.

VJP315 reads it for a custom_vjp linearized in the same module, vjplint.project.summary for one
linearized in another module of the run."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

from vjplint.model.file_model import CallSite, CustomDerivative, FileModel
from vjplint.model.jaxapi import PARTIAL
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, constant_value, named_function
from vjplint.facts.registry import query

# The forward-mode transformations whose function argument meets a custom_vjp (jax-facts §16).
FORWARD = ("jax.jvp", "jax.jacfwd", "jax.linearize", "jax._src.api.jvp", "jax._src.api.jacfwd",
           "jax._src.api.linearize")


@query
def linear_fn_applied(model, call: ast.Call) -> Optional[int]:
    """The line where the linear function of `jax.linearize(...)` (`call`) is used, or None when
    it is not: `jax.linearize(f, x)[1](v)`, or `y, f_lin = jax.linearize(f, x)` and a later read
    of `f_lin` in the same scope."""
    index = model.index
    parent = index.parent(call)
    if isinstance(parent, ast.Subscript) and parent.value is call:
        position = constant_value(index, parent.slice)
        grand = index.parent(parent)
        if position in (1, -1) and isinstance(grand, ast.Call) and grand.func is parent:
            return grand.lineno
        return None
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
        return None
    target = parent.targets[0]
    if not (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
            and isinstance(target.elts[1], ast.Name)):
        return None
    name = target.elts[1].id
    if name == "_":
        return None
    scope = index.scope_of(parent)
    for node in index.names(name):
        if isinstance(node.ctx, ast.Load) and index.inside(node, scope.node):
            if any(b.node is parent for b in index.lookup(name, index.scope_of(node))):
                return node.lineno
    return None


# -- whether forward mode reaches a custom_vjp (VJP315) -------------------------------------------
HESSIAN = ("jax.hessian", "jax._src.api.hessian")
REVERSE = ("jax.grad", "jax.jacrev", "jax._src.api.grad", "jax._src.api.jacrev")
# Wrappers that keep the function's custom_vjp calls visible to the jvp.
PASS_THROUGH = ("jax.jit", "jax.vmap", "jax.pmap", "jax.checkpoint", "jax.remat", "jax.named_call",
                "jax.ad_checkpoint.checkpoint", "jax._src.api.jit", "jax._src.api.vmap")
# JAX functions that call a function argument on operands (`lax.scan(step, init, xs)`): forward
# mode through them reaches the custom_vjp their body calls, with the operands and what the
# body closes over carrying the tangent. By qualname: the positions of the function arguments,
# and for each body parameter the operand it receives (None: none of them, the loop index);
# no tuple: every operand may reach every parameter (`lax.cond`'s operands). `functools.reduce(step,
# xs, init)` calls `step(acc, x)` the same way.
HIGHER_ORDER: Dict[str, Tuple[Tuple[int, ...], Optional[Tuple[Optional[int], ...]]]] = {
    "jax.lax.scan": ((0,), (1, 2)), "jax.lax.map": ((0,), (1,)), "jax.lax.fori_loop": ((2,), (None, 3)),
    "jax.lax.while_loop": ((0, 1), (2,)), "jax.lax.cond": ((1, 2), None),
    "jax.lax.associative_scan": ((0,), (1, 1)),
    "jax.tree_util.tree_map": ((0,), (1, 2, 3)), "jax.tree.map": ((0,), (1, 2, 3)),
    "functools.reduce": ((0,), (2, 1)),
}
# Calls whose result carries no tangent of their arguments.
NO_TANGENT = frozenset({"jax.lax.stop_gradient", "jax.numpy.zeros_like", "jax.numpy.ones_like",
                        "jax.numpy.empty_like", "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size"})
# Methods that put a value into a container in place (`full[i] = v` too): the container then carries it.
MUTATORS = frozenset({"append", "extend", "insert", "update", "add", "setdefault", "appendleft"})
# Transformations that trace without evaluating: a jvp of a custom_vjp inside them does not raise.
ABSTRACT_ONLY = ("jax.make_jaxpr", "jax.eval_shape")
MAX_CALL_DEPTH = 4  # calls followed from the transformed function to the custom_vjp (a loss, a model, its method, a helper)
# Library functions that run a custom_vjp on their inputs, what makes them one, and whether its
# fwd and bwd call it again (so forward over reverse fails too). Measured on JAX 0.10.2,
# docs/facts/scripts/library_custom_vjp.py: a tangent reaching `y0`, `t`, the extra arguments or a
# value the dynamics close over (odeint closure-converts them into inputs) raises.
LIBRARY_VJP: Dict[str, Tuple[str, bool]] = {
    "jax.experimental.ode.odeint": ("`odeint` (jax.experimental.ode) integrates with `_odeint`, a custom_vjp whose "
                                    "inputs are `y0`, `t`, the extra arguments and what the dynamics close over",
                                    True),
}


@dataclass
class Library:
    """A library function that runs a custom_vjp (`LIBRARY_VJP`)."""

    qualname: str

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass
class Caller:
    """A function of the module the tangent flows through: `fn`, or `cls`'s `__call__` (`fn`)."""

    fn: FunctionNode
    cls: Optional[ast.ClassDef] = None


# How the tangent reaches a custom_vjp, one step each; `inner` is the next step.
@dataclass
class IsCustomVjp:
    """The differentiated function is custom_vjp `d`."""

    d: CustomDerivative


@dataclass
class InstanceCall:
    """The differentiated `expr` is an instance of `cls`, whose `__call__` goes on (`inner`)."""

    expr: ast.expr
    cls: ast.ClassDef
    inner: "Step"


@dataclass
class CallsVjp:
    """`caller` calls custom_vjp `d` at `call` with `arg`, which carries the tangent."""

    caller: Caller
    d: CustomDerivative
    call: ast.Call
    arg: ast.expr


@dataclass
class CallsLibrary:
    """`caller` calls a `LIBRARY_VJP` function at `call` with `value`, which carries the tangent."""

    caller: Caller
    call: ast.Call
    value: ast.expr
    library: Library


@dataclass
class CallsThrough:
    """`caller` calls a function of the module (an instance of `instance_of`) at `call` with
    `carrier`, which carries the tangent on (`inner`)."""

    caller: Caller
    call: ast.Call
    instance_of: Optional[ast.ClassDef]
    carrier: ast.expr
    inner: "Step"


@dataclass
class PassedIn:
    """The differentiated name is parameter `param` of `fn`, a higher-order helper (`def hvp(f, x,
    v): jax.jvp(jax.grad(f), ...)`), which the module calls at `call` with `arg`; `inner` goes on."""

    param: str
    fn: FunctionNode
    call: ast.Call
    arg: ast.expr
    inner: "Step"


Step = Union[IsCustomVjp, InstanceCall, CallsVjp, CallsLibrary, CallsThrough, PassedIn]


@query(memo=False)
def reached(step: Step) -> Union[CustomDerivative, Library]:
    """The custom_vjp (or library function) at the end of the steps."""
    while isinstance(step, (InstanceCall, CallsThrough, PassedIn)):
        step = step.inner
    return step.library if isinstance(step, CallsLibrary) else step.d


@dataclass
class RuleCall:
    """A rule of the custom_vjp reached (role, its name) that calls custom_vjp `inner` at `call`,
    or (`inner` None) `jax.pure_callback`, which has no JVP, there or in `helper`, a function of
    the module it calls."""

    role: str
    name: str
    inner: Optional[CustomDerivative]
    call: ast.Call
    helper: Optional[str] = None


# Callbacks with no JVP rule: forward mode through one raises "Pure callbacks do not support JVP".
NO_JVP_CALLBACKS = ("jax.pure_callback", "jax._src.callback.pure_callback")


class ForwardMode:
    """Where forward-mode differentiation of the module meets a custom_vjp."""

    def __init__(self, model: FileModel, kind: str = "vjp") -> None:
        self.model = model
        self.kind = kind  # "jvp": where a custom_jvp is reached instead (VJP369)
        self._mutated: Dict[FunctionNode, Dict[str, List[ast.expr]]] = {}
        # The custom_vjp calls of the module, by the function making them.
        self._callers: Dict[Optional[ast.AST], List[Tuple[CustomDerivative, CallSite]]] = {}
        for d in model.derivatives:
            if d.kind == self.kind:
                for site in d.call_sites:
                    if site.enclosing is not None:
                        self._callers.setdefault(site.enclosing, []).append((d, site))

    def not_evaluated(self, node: ast.AST) -> bool:
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
    def reverse_target(self, expr: ast.expr, depth: int = 0,
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
            return self.reverse_target(call.args[0], depth + 1, True)
        if q in REVERSE:
            return call.args[0], self.argnums(call), q.rsplit(".", 1)[1], staged
        return None

    def rule_calling_vjp(self, d: Union[CustomDerivative, Library],
                         roles: Tuple[str, ...]) -> Union[None, bool, RuleCall]:
        """A rule of `d` in `roles` that runs a custom_vjp (fwd written as `return f(x), res`); for
        a library function, True when its fwd and bwd call it again; None (or False) otherwise."""
        if isinstance(d, Library):
            return LIBRARY_VJP[d.qualname][1]
        for role, rule in self.model.facts.rules_of(d):
            if rule.node is None or role not in roles:
                continue
            for inner, site in self._callers.get(rule.node, []):
                return RuleCall(role, rule.name or role, inner, site.call)
        for role, rule in self.model.facts.rules_of(d):  # a pure_callback, here or in a helper
            if rule.node is None or role not in roles:
                continue
            found = self.callback_in(rule.node, 0)
            if found is not None:
                call, helper = found
                return RuleCall(role, rule.name or role, None, call, helper)
        return None

    def callback_in(self, fn: FunctionNode, depth: int = 0) -> Optional[Tuple[ast.Call, Optional[str]]]:
        """A `jax.pure_callback` call in `fn`, or in a function of the module it calls (two deep)."""
        calls = self.model.facts.own_of_types(fn, (ast.Call,))
        for node in calls:
            func = node.func  # type: ignore[attr-defined]
            bound = self._bound_call(func)  # `callback = functools.partial(jax.pure_callback, vmap_method=...)`
            if bound is not None and bound.args and self.model.index.qualname(bound.func) in PARTIAL:
                func = bound.args[0]
            if self.model.index.qualname(func) in NO_JVP_CALLBACKS:
                return node, None  # type: ignore[return-value]
        if depth >= 2:
            return None
        for node in calls:
            callee = named_function(self.model.index, node.func)  # type: ignore[attr-defined]
            if callee is None or callee is fn or self.model.derivative_for_node(callee) is not None:
                continue
            found = self.callback_in(callee, depth + 1)
            if found is not None:
                return found[0], found[1] or getattr(callee, "name", "<lambda>")
        return None

    # -- what is being differentiated ---------------------------------------------------
    def reach(self, expr: ast.expr, argnums: Optional[Tuple[int, ...]], depth: int = 0, skip: int = 0,
              bound: Sequence[str] = ()) -> Optional[Step]:
        """How differentiating `expr` reaches a custom_vjp; `skip` leading positional parameters
        and the keyword names in `bound` are fixed by functools.partial (not perturbed)."""
        if depth > 4:
            return None
        d = self.model.facts.derivative_named(expr)
        if d is not None:
            if d.kind != self.kind:
                return None
            if argnums is not None and d.nondiff and all(a in d.nondiff for a in argnums):
                return None  # only nondiff positions are perturbed: another error (VJP10x)
            return IsCustomVjp(d)
        if isinstance(expr, ast.Call) and expr.args:
            q = self.model.index.qualname(expr.func)
            if q in PASS_THROUGH:
                return self.reach(expr.args[0], argnums, depth + 1, skip, bound)
            if q in PARTIAL:
                fixed = len(expr.args) - 1
                shifted = None if argnums is None else tuple(a + fixed for a in argnums)
                return self.reach(expr.args[0], shifted, depth + 1, skip + fixed,
                                    (*bound, *(k.arg for k in expr.keywords if k.arg)))
            return None
        fn = self._function(expr)
        if fn is None and isinstance(expr, ast.Attribute):
            bound = self._bound_method(expr)
            if bound is not None:  # `jax.jacfwd(model.apply)`: `self` is not perturbed
                cls, method = bound
                shifted = None if argnums is None else tuple(a + 1 for a in argnums)
                return self.calls_vjp(method, shifted, skip + 1, bound=(), caller=Caller(method, cls))
        if fn is None:
            method = self._instance_call(expr)
            if method is not None:  # an object whose `__call__` runs the custom_vjp: `self` is not perturbed
                cls, call = method
                shifted = None if argnums is None else tuple(a + 1 for a in argnums)
                inner = self.calls_vjp(call, shifted, skip + 1, bound, caller=Caller(call, cls))
                return None if inner is None else InstanceCall(expr, cls, inner)
            wrapped = self._bound_call(expr)
            if wrapped is not None and self.model.index.qualname(wrapped.func) in (*PASS_THROUGH, *PARTIAL):
                return self.reach(wrapped, argnums, depth + 1, skip, bound)
            made = self.made_vjp(expr)
            if made is not None:
                return IsCustomVjp(made[0])
            return self._passed_in(expr, argnums, depth, skip, bound)
        return self.calls_vjp(fn, argnums, skip, bound)

    def _passed_in(self, expr: ast.expr, argnums: Optional[Tuple[int, ...]], depth: int, skip: int,
                   bound: Sequence[str]) -> Optional[Step]:
        """`expr` a parameter of the function it is read in, never rebound: what the module's calls
        of that function pass for it, reached in turn (the first that reaches a custom_vjp)."""
        index = self.model.index
        fn = index.enclosing_function(expr) if isinstance(expr, ast.Name) else None
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        scope = index.scopes.get(fn)
        own = scope.bindings.get(expr.id, []) if scope is not None else []  # type: ignore[attr-defined]
        positional = self.model.signature(fn).positional
        if len(own) != 1 or own[0].kind != "param" or expr.id not in positional:  # type: ignore[attr-defined]
            return None
        position = positional.index(expr.id)  # type: ignore[attr-defined]
        for call in self.model.facts.calls_of_name(fn.name):
            if not any(b.node is fn for b in index.lookup(fn.name, index.scope_of(call))):
                continue
            stars = any(isinstance(a, ast.Starred) for a in call.args[:position + 1])
            arg = call.args[position] if position < len(call.args) and not stars else next(
                (k.value for k in call.keywords if k.arg == expr.id), None)  # type: ignore[attr-defined]
            inner = None if arg is None or stars else self.reach(arg, argnums, depth + 1, skip, bound)
            if inner is not None:
                return PassedIn(expr.id, fn, call, arg, inner)  # type: ignore[arg-type, attr-defined]
        return None

    def _function(self, expr: ast.expr) -> Optional[FunctionNode]:
        """A lambda, or the def or lambda a name is bound to once (a def only when its decorators
        all pass tangents through: `@jax.jit`)."""
        fn = named_function(self.model.index, expr)
        if fn is None:
            return self._class_function(expr)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and not all(
                self.model.index.qualname(dec) in PASS_THROUGH for dec in fn.decorator_list):
            made = self._decorated(fn)
            return made if not isinstance(made, CustomDerivative) else None
        return fn

    def _class_function(self, expr: ast.expr) -> Optional[ast.FunctionDef]:
        """`Model.energy`: a static method (or a plain def read on the class, `self` then passed
        explicitly) of a class of the module, by the class's name."""
        if not isinstance(expr, ast.Attribute) or not isinstance(expr.value, ast.Name):
            return None
        index = self.model.index
        classes = [b for b in index.lookup(expr.value.id, index.scope_of(expr)) if b.kind == "class"]
        scope = index.scopes.get(classes[0].node) if len(classes) == 1 else None
        methods = scope.bindings.get(expr.attr, []) if scope is not None else []
        if len(methods) != 1 or methods[0].kind != "def" or not isinstance(methods[0].node, ast.FunctionDef):
            return None
        method = methods[0].node
        if any(index.qualname(d) != "builtins.staticmethod" for d in method.decorator_list):
            return None
        return method

    def _decorated(self, fn: ast.AST) -> Union[None, FunctionNode, CustomDerivative]:
        """What a def decorated by one decorator of the module becomes: the custom_vjp the
        decorator returns (`@ste`, whose every return is a custom_vjp), or the wrapper function it
        returns (`@iterative_autograd(solve_bwd)`, a factory of a decorator), which is called in
        the def's place."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        decs = [d for d in fn.decorator_list if self.model.index.qualname(d) not in PASS_THROUGH
                and not (isinstance(d, ast.Call) and self.model.index.qualname(d.func) in PARTIAL)]
        if len(decs) != 1 or self.model.derivative_for_node(fn) is not None:
            return None
        deco = named_function(self.model.index, decs[0]) if not isinstance(decs[0], ast.Call) \
            else self._returned_function(named_function(self.model.index, decs[0].func))
        if not isinstance(deco, (ast.FunctionDef, ast.AsyncFunctionDef)) or deco is fn:
            return None
        returns = [r.value for r in self.model.facts.returns_of(deco) if r.value is not None]
        made = [self.made_vjp(r, 1) for r in returns]
        if made and all(m is not None and m[0] is made[0][0] for m in made):
            return made[0][0]  # type: ignore[index]
        return self._returned_function(deco)

    def _returned_function(self, factory: Optional[ast.AST]) -> Optional[FunctionNode]:
        """The function of the module that `factory` always returns (a nested def or lambda)."""
        if not isinstance(factory, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        found = {named_function(self.model.index, r.value) if r.value is not None else None
                 for r in self.model.facts.returns_of(factory)}
        if len(found) != 1:
            return None
        only = found.pop()
        return only if isinstance(only, FUNCTION_TYPES) and only is not factory else None

    def _bound_call(self, expr: ast.expr) -> Optional[ast.Call]:
        """The call a name is bound to once (`cube_jit = jax.jit(cube)`), for wrappers."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, ast.Call):
            return bindings[0].value
        return None

    def _bound_method(self, expr: ast.Attribute) -> Optional[Tuple[ast.ClassDef, ast.FunctionDef]]:
        """(class, method) for `obj.method` where `obj` is an instance of a class of this module and
        the method a plain one (not a static or class method)."""
        cls = self.model.facts.values().instance_class(expr.value) or self._self_class(expr.value)
        method = self.model.facts.values().method_of(cls, expr.attr) if cls is not None else None
        if method is None or any(self.model.index.qualname(d) in ("builtins.staticmethod", "builtins.classmethod")
                                 for d in method.decorator_list):
            return None
        return cls, method

    def _self_class(self, expr: ast.expr) -> Optional[ast.ClassDef]:
        """The class whose method reads `expr` as its first parameter (`self`), never rebound."""
        if not isinstance(expr, ast.Name):
            return None
        fn = self.model.index.enclosing_function(expr)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        cls = self.model.index.parent(fn)
        params = [*fn.args.posonlyargs, *fn.args.args]
        if not isinstance(cls, ast.ClassDef) or not params or params[0].arg != expr.id or any(
                self.model.index.qualname(d) in ("builtins.staticmethod", "builtins.classmethod")
                for d in fn.decorator_list):
            return None
        bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
        return cls if len(bindings) == 1 and bindings[0].kind == "param" else None

    def _instance_call(self, expr: ast.expr) -> Optional[Tuple[ast.ClassDef, ast.FunctionDef]]:
        """(class, `__call__`) when `expr` is an instance of a class of this module (an equinox
        Module, a plain class with `__call__`)."""
        values = self.model.facts.values()
        cls = values.instance_class(expr)
        if cls is None:
            return None
        call = values.method_of(cls, "__call__")
        return None if call is None else (cls, call)

    def calls_vjp(self, fn: FunctionNode, argnums: Optional[Tuple[int, ...]], skip: int,
                  bound: Sequence[str], depth: int = 0, caller: Optional[Caller] = None,
                  closed: Set[str] = frozenset()) -> Optional[Step]:  # type: ignore[assignment]
        """How `fn` hits a custom_vjp with a perturbed argument: it calls one directly (by its
        name, an alias `g = jax.jit(f)`, or what a factory of the module returns), or calls a
        function or callable object of this module that does (two levels at most). `closed`: the
        names `fn` reads from an enclosing function that carry the tangent there."""
        positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        star: Optional[Set[int]] = None  # the perturbed entries of `*args` (None: all of them)
        if argnums is None:
            perturbed = {p for p in positional[skip:] if p not in bound}
            if fn.args.vararg is not None:
                perturbed.add(fn.args.vararg.arg)
        else:
            perturbed = {positional[a] for a in argnums if 0 <= a < len(positional)}
            star = {a - len(positional) for a in argnums if a >= len(positional)}
            if star and fn.args.vararg is not None:
                perturbed.add(fn.args.vararg.arg)  # `lambda *a: f(*a)` differentiated in `a[0]`
        perturbed |= closed
        if not perturbed:
            return None
        caller = caller or Caller(fn)
        sites = [(d, site.call, 0) for d, site in self._callers.get(fn, [])]
        sites.extend(self._alias_calls(fn))
        for d, call, offset in sites:
            if d.primal is fn:
                continue
            for position, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred):  # `f(*xs)`: any later position may be a differentiable one
                    if any(p not in d.nondiff for p in range(position + offset, position + offset + 8)) and \
                            self._depends_on(arg.value, fn, perturbed):
                        return CallsVjp(caller, d, call, arg.value)
                    break
                if position + offset in d.nondiff:
                    continue
                if self._depends_on(arg, fn, perturbed):
                    return CallsVjp(caller, d, call, arg)
            for keyword in call.keywords:
                if self._depends_on(keyword.value, fn, perturbed):
                    return CallsVjp(caller, d, call, keyword.value)
        library = self._calls_library(fn, perturbed, caller)
        if library is not None:
            return library
        return None if depth >= MAX_CALL_DEPTH else self._calls_through(fn, perturbed, caller, depth, star)

    def _calls_library(self, fn: FunctionNode, perturbed: Set[str], caller: Caller) -> Optional[Step]:
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
                    return CallsLibrary(caller, node, value, Library(q))  # type: ignore[arg-type]
        return None

    def _carries(self, value: ast.expr, fn: FunctionNode, perturbed: Set[str]) -> bool:
        if not isinstance(value, ast.Lambda):
            return self._depends_on(value, fn, perturbed)
        own = {a.arg for a in (*value.args.posonlyargs, *value.args.args, *value.args.kwonlyargs)}
        own |= {a.arg for a in (value.args.vararg, value.args.kwarg) if a is not None}
        return self._depends_on(value.body, fn, perturbed - own)

    def _calls_through(self, fn: FunctionNode, perturbed: Set[str], caller: Caller, depth: int,
                       star: Optional[Set[int]] = None) -> Optional[Step]:
        """A call in `fn` of a function (`def`, lambda) or instance of this module that passes a
        perturbed value on to a custom_vjp: `jax.jacfwd(lambda v: model(v))`, and `fn`'s own
        `*args` forwarded whole (`lambda *a: loss(*a)`): its perturbed entries land at the same
        offsets from where they are unpacked."""
        vararg = fn.args.vararg.arg if fn.args.vararg is not None else None
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            body = self._higher_order(node, fn, perturbed, caller, depth)
            if body is not None:
                return body
            callee = self._callee(node.func)
            if callee is None:
                continue
            target, offset, callee_caller, instance = callee
            params = [a.arg for a in (*target.args.posonlyargs, *target.args.args)]
            positions: List[int] = []
            carrier: Optional[ast.expr] = None
            for position, arg in enumerate(node.args):
                if isinstance(arg, ast.Starred):
                    if vararg is not None and vararg in perturbed and isinstance(arg.value, ast.Name) and \
                            arg.value.id == vararg and position == len(node.args) - 1:
                        if star is None:  # every entry of `*args` perturbed
                            positions.extend(range(position + offset, max(len(params), position + offset + 1)))
                        else:
                            positions.extend(position + offset + s for s in sorted(star))
                        carrier = carrier or arg.value
                    elif self._depends_on(arg.value, fn, perturbed):  # `g(*full)`, `full[i] = x`: any later one
                        positions.extend(range(position + offset, max(len(params), position + offset + 1)))
                        carrier = carrier or arg.value
                    break  # later positions are unknown
                if self._depends_on(arg, fn, perturbed):
                    positions.append(position + offset)
                    carrier = carrier or arg
            for keyword in node.keywords:
                if keyword.arg is None and self._depends_on(keyword.value, fn, perturbed):  # `g(**kw)`
                    positions.extend(range(offset, len(params)))
                    carrier = carrier or keyword.value
                elif keyword.arg in params and self._depends_on(keyword.value, fn, perturbed):
                    positions.append(params.index(keyword.arg))
                    carrier = carrier or keyword.value
            closed = self._closed_over(target, fn, perturbed)
            if carrier is None and not closed:
                continue
            inner = self.calls_vjp(target, tuple(positions), offset, (), depth + 1, callee_caller, closed)
            if inner is not None:
                return CallsThrough(caller, node, instance, carrier or node.func, inner)
        return None

    def _higher_order(self, node: ast.Call, fn: FunctionNode, perturbed: Set[str], caller: Caller,
                      depth: int) -> Optional[Step]:
        """`lax.scan(step, init, xs)` (HIGHER_ORDER) in `fn` with a function of the module as body:
        the body's parameters carry the tangent when an operand does, and so do the names it
        closes over that carry it in `fn`."""
        q = self.model.index.qualname(node.func)
        if q not in HIGHER_ORDER:
            return None
        slots, feeds = HIGHER_ORDER[q]
        operands = {i: a for i, a in enumerate(node.args) if i not in slots}

        def carries(a: ast.expr) -> bool:
            return self._depends_on(a.value if isinstance(a, ast.Starred) else a, fn, perturbed)
        keyword = next((k.value for k in node.keywords if carries(k.value)), None)
        for i in slots:
            made = self.made_vjp(node.args[i]) if i < len(node.args) else None
            if made is not None:  # `tree_map(f, xs)` with custom_vjp `f` itself
                fed = [operands.get(f) for f in (feeds or ())]
                hit = next((a for a in (fed if feeds else operands.values()) if a is not None and carries(a)), keyword)
                if hit is not None:
                    return CallsVjp(caller, made[0], node, hit)
                continue
            body = self._function(node.args[i]) if i < len(node.args) else None
            if body is None:
                continue
            params = len(body.args.posonlyargs) + len(body.args.args)
            if feeds is None:  # every operand may reach every parameter
                carried = next((a for a in operands.values() if carries(a)), keyword)
                argnums: Tuple[int, ...] = tuple(range(params)) if carried is not None else ()
            else:
                fed = [(p, operands.get(f)) for p, f in enumerate(feeds) if f is not None]
                hits = [(p, a) for p, a in fed if a is not None and carries(a)]
                carried = hits[0][1] if hits else keyword
                argnums = tuple(p for p, _ in hits) if keyword is None else tuple(range(params))
            closed = self._closed_over(body, fn, perturbed)
            if carried is None and not closed:
                continue
            inner = self.calls_vjp(body, argnums, 0, (), depth + 1, Caller(body), closed)
            if inner is not None:  # the body closing over a perturbed name carries it, or an operand
                return CallsThrough(caller, node, None, node.args[i] if closed or carried is None else carried, inner)
        return None

    def _closed_over(self, target: FunctionNode, fn: FunctionNode, perturbed: Set[str]) -> Set[str]:
        """The names a function nested in `fn` reads from `fn` that carry the tangent there."""
        if self.model.index.enclosing_function(target) is not fn:
            return set()
        scope = self.model.index.scopes.get(target)
        own = set(scope.bindings) if scope is not None else set()
        found: Set[str] = set()
        for node in self.model.facts.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in own \
                    and node.id not in found and self._depends_on(node, fn, perturbed):
                found.add(node.id)
        return found

    def made_vjp(self, expr: ast.expr, depth: int = 0) -> Optional[Tuple[CustomDerivative, int]]:
        """(custom_vjp, positions bound by partial) when `expr` names one of the module's custom_vjps
        through a name bound once to a wrapper of it (`g = jax.jit(f)`, `partial(f, c)`) or to
        what a function of the module returns (`spike = Axon(...)`, whose every return is one)."""
        if depth > 3:
            return None
        d = self.model.facts.derivative_named(expr)
        if d is not None:
            return (d, 0) if d.kind == self.kind else None
        call = expr if isinstance(expr, ast.Call) else self._bound_call(expr)
        if call is None:
            decorated = self._decorated(named_function(self.model.index, expr)) if isinstance(expr, ast.Name) else None
            return (decorated, 0) if isinstance(decorated, CustomDerivative) and decorated.kind == self.kind else None
        q = self.model.index.qualname(call.func)
        if q in PASS_THROUGH and call.args:
            return self.made_vjp(call.args[0], depth + 1)
        if q in PARTIAL and call.args:
            inner = self.made_vjp(call.args[0], depth + 1)
            return None if inner is None else (inner[0], inner[1] + len(call.args) - 1)
        factory = named_function(self.model.index, call.func)
        if not isinstance(factory, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        made = [self.made_vjp(r.value, depth + 1) if r.value is not None else None
                for r in self.model.facts.returns_of(factory)]
        if made and all(m is not None and m == made[0] for m in made):
            return made[0]
        return None

    def _alias_calls(self, fn: FunctionNode) -> List[Tuple[CustomDerivative, ast.Call, int]]:
        """`fn`'s calls of a custom_vjp through an alias or a factory's result (`made_vjp`)."""
        found: List[Tuple[CustomDerivative, ast.Call, int]] = []
        for node in self.model.facts.own_of_types(fn, (ast.Call,)):
            if self.model.facts.derivative_named(node.func) is not None:  # type: ignore[attr-defined]
                continue  # a direct call: a call site
            func = node.func  # type: ignore[attr-defined]
            if not isinstance(func, (ast.Name, ast.Call)) or isinstance(func, ast.Call) and \
                    self.model.index.qualname(func.func) not in (*PASS_THROUGH, *PARTIAL):
                continue
            made = self.made_vjp(func)
            if made is not None:
                found.append((made[0], node, made[1]))  # type: ignore[arg-type]
        return found

    def _callee(self, func: ast.expr, depth: int = 0) -> Optional[Tuple[FunctionNode, int, Caller, Optional[ast.ClassDef]]]:
        """(function, leading parameters not passed, the caller it makes, the instance's class) for
        a call of a function of this module or of an instance whose class has `__call__`."""
        if self.model.facts.derivative_named(func) is not None:
            return None  # a custom derivative itself: a direct call, seen above
        while isinstance(func, ast.Call) and func.args and self.model.index.qualname(func.func) in PASS_THROUGH:
            func = func.args[0]  # `jax.vmap(g)(x)`, `jax.checkpoint(g)(x)`
        made = func if isinstance(func, ast.Call) else self._bound_call(func)
        if made is not None and made.args and self.model.index.qualname(made.func) in PARTIAL and depth < 3 and \
                not any(isinstance(a, ast.Starred) for a in made.args):
            inner = self._callee(made.args[0], depth + 1)  # `total = partial(objective, cost)`: `total(U)`
            return None if inner is None else (inner[0], inner[1] + len(made.args) - 1, *inner[2:])  # type: ignore[return-value]
        fn = self._function(func)
        if fn is not None:
            return fn, 0, Caller(fn), None
        method = self._instance_call(func)
        if method is not None:
            cls, call = method
            return call, 1, Caller(call, cls), cls
        bound = self._bound_method(func) if isinstance(func, ast.Attribute) else None
        if bound is not None:  # `self._solve(x)`, `layer.apply(x)`: `self` is not passed
            cls, method_fn = bound
            return method_fn, 1, Caller(method_fn, cls), None
        return None

    def _depends_on(self, expr: ast.expr, fn: FunctionNode, perturbed: Set[str], depth: int = 0) -> bool:
        """Whether `expr` is computed from a perturbed parameter of `fn` (not through stop_gradient)."""
        if depth > 5:
            return False
        scope = self.model.index.scopes.get(fn)
        for node in _names_outside_stop_gradient(self.model, expr):
            bindings = scope.bindings.get(node.id, []) if scope is not None else []
            if not bindings:  # a comprehension's variable: bound in the comprehension's own scope
                bindings = [b for b in self.model.index.lookup(node.id, self.model.index.scope_of(node))
                            if isinstance(b.node, ast.comprehension)]
            if not bindings and node.id in perturbed:
                return True  # a name of an enclosing function that carries the tangent there
            for binding in bindings:
                if binding.kind == "param" and node.id in perturbed:
                    return True
                if binding.kind == "assign":
                    source = binding.value if binding.value is not None else _bound_from(binding.node)
                    if source is not None and self._depends_on(source, fn, perturbed, depth + 1):
                        return True
            for value in self._mutations(fn).get(node.id, ()):
                if self._depends_on(value, fn, perturbed, depth + 1):
                    return True
        return False

    def _mutations(self, fn: FunctionNode) -> Dict[str, List[ast.expr]]:
        """The values `fn` puts into its containers in place: `full[i] = v`, `xs.append(v)`."""
        found = self._mutated.get(fn)
        if found is None:
            found = {}
            for node in self.model.facts.own_nodes(fn):
                if isinstance(node, (ast.Assign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                            found.setdefault(target.value.id, []).append(node.value)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name):
                    found.setdefault(node.func.value.id, []).extend(
                        [*node.args, *(k.value for k in node.keywords)])
            self._mutated[fn] = found
        return found

    def argnums(self, call: ast.Call, positional: bool = True) -> Optional[Tuple[int, ...]]:
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



def _bound_from(stmt: ast.AST) -> Optional[ast.expr]:
    """What a name bound without a value of its own comes from: the right-hand side of a tuple
    assignment, the iterable of a `for` or comprehension, the context of a `with`."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return stmt.value
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.comprehension)):
        return stmt.iter
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return ast.Tuple([item.context_expr for item in stmt.items], ast.Load())
    return None


def _names_outside_stop_gradient(model, expr: ast.expr) -> List[ast.Name]:
    found: List[ast.Name] = []
    stack: List[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and model.index.qualname(node.func) in NO_TANGENT:
            continue
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "size"):
            continue
        if isinstance(node, FUNCTION_TYPES):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found
