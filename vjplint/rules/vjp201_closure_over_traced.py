from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from vjplint.diagnostics import Applicability, Fix, Severity
from vjplint.plans.closure_plan import closure_edits, closure_edits_jvp
from vjplint.plans.residual_plan import Refusal
from vjplint.facts import describe_traced
from vjplint.facts.callsites import static_at_every_call
from vjplint.facts.crossmodule import external_calls
from vjplint.facts.values import numeric_use
from vjplint.facts.infer import Evidence, Verdict, annotation_evidence, argument_at, default_evidence, name_evidence, open_parameter, usage_evidence
from vjplint.model.jaxapi import ARRAY_NAMESPACES, STATIC_ATTRIBUTES
from vjplint.model.file_model import CustomDerivative, Signature
from vjplint.rules.base import Rule
from vjplint.model.semantic import FUNCTION_TYPES, Binding, FunctionNode, Scope, child_nodes
from vjplint.facts.value_kinds import Kind

REVERSE_MODE = frozenset({"jax.grad", "jax.value_and_grad", "jax.vjp", "jax.jacrev"})
# Values that carry no derivative or no tracer: closing over them is fine.
CLEAN_CALLS = frozenset({
    "jax.lax.stop_gradient", "jax.closure_convert", "jax.custom_derivatives.closure_convert",
    "builtins.len", "builtins.int", "builtins.float", "builtins.bool", "builtins.str", "builtins.isinstance",
    "builtins.type", "builtins.id", "builtins.hash", "builtins.repr", "builtins.callable", "builtins.hasattr",
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.result_type", "jax.numpy.dtype",
    "numpy.shape", "numpy.ndim", "numpy.size", "jax.tree_util.tree_structure", "jax.tree.structure",
})


@dataclass
class Root:
    """A parameter a captured value comes from, and how."""

    param: str
    function: FunctionNode
    chain: List[str] = field(default_factory=list)  # "`scale = jnp.exp(log_scale)`", outermost last
    computed_with: Optional[str] = None  # a jnp/lax call on the way, quoted


@dataclass
class Capture:
    name: str
    first: ast.expr  # the first read, where the diagnostic goes
    readers: List[str] = field(default_factory=list)


class ClosureOverTraced(Rule):
    """## What it does
    Flags a `jax.custom_vjp` / `jax.custom_jvp` function, or one of its fwd/bwd/jvp rules,
    defined inside a function and reading that function's parameters or values computed from
    them (also `obj.attr` of an object built from them, and `self` of a method), when the value
    may be a tracer: the enclosing function is traced (jit/grad/vmap/scan... in this module) or
    called from traced code with a traced argument (in this module, or in another module of the
    run: a factory `make(rate)` that a module importing it calls from a differentiated function),
    the value is annotated or computed as an array, or it is used as array data.

    As a warning that says "may": a parameter of the enclosing function (or a value unpacked or
    computed from one) that nothing here shows traced, when the primal reads it and the bwd/jvp
    rule computes with it as array data, and nothing marks it static (a static annotation,
    default or use; callers that pass only static Python values: every call of the enclosing
    function in the run, this module and the others, passes a literal or a module constant, or
    leaves a default that is one; a PRNG key, which is never differentiated). Whether it fails depends on whether a caller differentiates with respect to
    it, which this module does not show. A value only the primal reads (an offset, batched data)
    is not reported this way. The same holds one object away: a value read from `self`
    (`w = self.params["w"]`, `self.beta`) that the object's constructor stores from such a
    parameter where the object is built (`Gate({"w": w})` in a helper).

    A `jax.custom_gradient` function defined inside a function is judged the same way, its body
    as the primal and the vjp function it returns (a lambda, or a local `def` or lambda) as the
    bwd rule; the vjp reading the body's own inputs and values is the design and is not reported.
    Its "may" also covers a value only the vjp function reads, as array data: that is how
    custom_gradient is written (a gradient-scaling or clipping layer closing over its scale), and
    such a value fails under `jax.grad(jax.jit(...))` though it is never differentiated
    (jax-ml/jax#24545, #25017). A custom_gradient whose body or vjp function reads a value the
    enclosing function computes from a parameter it also passes to the custom_gradient as an
    argument (its output or pullback from a `jax.vjp` run outside it, `out, op_vjp =
    jax.vjp(op, a, b)` then `inner(a, b)`) is an error, whatever traces the enclosing function:
    differentiating the custom_gradient, its purpose, makes the value a tracer of that same
    differentiation (not for a parameter marked static, a PRNG key, or one only given Python
    values; one report per custom_gradient).

    ## Why is this bad?
    JAX only knows how to differentiate a custom function with respect to its explicit
    arguments. A closed-over tracer fails as soon as it is differentiated (`jax.grad` with
    respect to it: `UnexpectedTracerError`, or for a custom_vjp staged by `jit`/`checkpoint`/
    `scan`: `CustomVJPException: Detected differentiation of a custom_vjp function with respect to
    a closed-over value`). Rules closing over a tracer of a `jit` that sits inside the `grad`
    (`jax.grad(jax.jit(f))`) fail at lowering with `TypeError: No constant handler for type
    DynamicJaxprTracer`, even when the value is not differentiated. Eager calls, `jit`, `vmap` and
    `jit(grad)` with respect to other arguments work, so tests pass until someone nests the
    transformations differently. A custom_vjp whose rules alone (not the primal) read the value
    works under every transformation but `jax.grad(jax.jit(...))` of the caller (the value gets no
    derivative through it, as the primal does not read it), and the message says so; one that is
    only differentiated where it is defined (`return jax.grad(g)(x0)`) works under all of them and
    is not flagged (measured: `docs/facts/scripts/hazard_closure_messages.py`).

    `jax.custom_gradient` is a custom_vjp whose fwd traces the returned vjp function, so it
    behaves alike (measured on JAX 0.10.2: `docs/facts/scripts/hazard_custom_gradient_closure.py`):
    a vjp closing over the enclosing function's `scale` works eagerly, under `jit`, `vmap`, `grad`
    and `jit(grad)`, but `jax.grad(jax.jit(f))` raises `TypeError: No constant handler for type:
    <class 'jax._src.interpreters.partial_eval.DynamicJaxprTracer'>` and
    `jax.grad(jax.checkpoint(f))` `UnexpectedTracerError`; when the body reads it too,
    `jax.grad` with respect to it raises `UnexpectedTracerError` (LinearizeTracer). A Python float
    closed over, or the value passed as an argument (the vjp returning `None` for it), works
    under all of them. A value computed outside from the custom_gradient's own arguments
    (`docs/facts/scripts/hazard_custom_gradient_jax1366.py`, jax-ml/jax#1366): an output or
    pullback from an outer `jax.vjp(op, a, b)`, an output `jnp.tanh(x)`, or cotangent factors
    `0.5 * b` read only by the vjp, with `inner(a, b)` called: eager, jit and vmap work; grad,
    jit(grad) and vmap(grad) raise `UnexpectedTracerError` (LinearizeTracer), grad(jit)
    `CustomVJPException` or NCH. `jax.vjp` run inside the custom_gradient on its arguments works
    under all of them, and a factor from a parameter the custom_gradient is not given fails only
    under grad(jit), as above.

    ## Example
    ```python
    def loss(c, x):
        @jax.custom_vjp
        def g(x):
            return c * jnp.sin(x)
        def g_fwd(x):
            return g(x), x
        def g_bwd(x, ct):
            return (c * jnp.cos(x) * ct,)
        g.defvjp(g_fwd, g_bwd)
        return jnp.sum(g(x))
    ```

    ## Use instead
    Pass the value explicitly (and return its cotangent, or `None`, from bwd):
    ```python
    @jax.custom_vjp
    def g(c, x):
        return c * jnp.sin(x)
    def g_fwd(c, x):
        return g(c, x), (c, x)
    def g_bwd(res, ct):
        c, x = res
        return (jnp.sum(jnp.sin(x) * ct), c * jnp.cos(x) * ct)
    g.defvjp(g_fwd, g_bwd)
    ```
    or keep the closure and hoist its tracers with `jax.closure_convert(fn, x)`, passing the
    returned constants as arguments of a custom function that takes `fn` in `nondiff_argnums`.

    ## Fix safety
    For a `jax.custom_vjp` (no `nondiff_argnums`) defined with `def` inside a function, with
    fwd and bwd defined there too and registered by one `defvjp`, the fix passes the value as a
    new leading argument: the primal and fwd take it first, fwd saves it in the residuals when bwd
    reads it (bwd unpacks it), every bwd `return` gets `None` in its slot, and every call of the
    custom_vjp in the enclosing function passes it. It is **safe** when only the rules read the
    value: the primal does not, so no gradient reached it through the custom_vjp before, and none
    does after (`None` is exact); the rewrite then also works under `jax.grad(jax.jit(...))`.
    It is **unsafe** when the primal reads the value: the original raised when differentiated
    with respect to it, the rewrite gives zero there (VJP602 then points at the `None`, which
    the author should replace with the cotangent). No fix is offered when the value is `self` or
    an object (an argument must be a pytree of arrays), is bound more than once, is used as a
    Python value, when the custom_vjp is used other than by calls in its defining function
    (returned, stored, passed to `vmap`: those callers cannot be given the value), when fwd/bwd
    are used elsewhere or are lambdas, when a fwd `return` is not a literal pair or a bwd
    `return` is not a tuple literal of the primal's arity.

    For a `jax.custom_jvp` (no `nondiff_argnums`) defined with `def` inside a function, with one
    `defjvp` rule defined there, the fix makes the value the primal's new leading parameter; the
    jvp rule takes it from `primals` and ignores its tangent (`(c, x), (_, t) = primals,
    tangents`), and every call passes it. Passing it through `nondiff_argnums` instead is no fix:
    a traced value there still fails under `jax.grad(jax.jit(...))` (docs/facts/fixes-v2.md).
    **Safe** when only the jvp rule reads the value (the primal's output does not depend on it,
    so its ignored tangent contributes nothing); **unsafe** when the primal reads it
    (differentiating with respect to it raised, and gives 0 after: write its tangent's
    contribution). Offered only when the rule unpacks `primals` and `tangents` by tuple
    assignments and never reads `_`. Proven on JAX: `fixtures/fix_small/vjp201_*`.

    No fix is offered for a `jax.custom_gradient`: pass the value as an argument by hand, its vjp
    function returning `None` (or its cotangent) in that slot; a value computed from its own
    arguments is computed inside it instead (`jax.vjp` on its arguments there).
    """

    CODE = "VJP201"
    NAME = "closure-over-traced"
    FIX = "pass the value as an explicit argument (safe when only the rules read it)"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp", b"custom_gradient")
    INVALID = ['''
import jax
import jax.numpy as jnp

def loss(c, x):
    @jax.custom_vjp
    def g(x):
        return c * jnp.sin(x)
    def g_fwd(x):
        return g(x), x
    def g_bwd(x, ct):
        return (c * jnp.cos(x) * ct,)
    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(x))

grad_c = jax.grad(loss)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

def make_power(n: int):
    @jax.custom_jvp
    def power(x):
        return x ** n
    @power.defjvp
    def power_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return power(x), n * x ** (n - 1) * t
    return power
''']

    def check(self) -> None:
        for d in self.model.derivatives:
            functions: List[Tuple[str, FunctionNode]] = []
            if d.primal is not None:
                functions.append((d.name, d.primal))
            for role, label, node in self._rules(d):
                functions.append((label, node))
            vjps = [node for _, _, node in self._rules(d)] if d.api == "custom_gradient" else []
            captures: Dict[Tuple[str, int], Capture] = {}
            for label, fn in functions:
                # A custom_gradient's vjp function lives in its body: the body's reads exclude it,
                # and the vjp's reads of the body's own values (its inputs) are the design.
                skip = [v for v in vjps if v is not fn]
                owner = d.primal if fn in vjps and d.primal is not None else fn
                for load, scope in self._free_loads(fn, skip, owner):
                    key = (load.id, id(scope.node))
                    capture = captures.setdefault(key, Capture(load.id, load))
                    if (load.lineno, load.col_offset) < (capture.first.lineno, capture.first.col_offset):
                        capture.first = load
                    if label not in capture.readers:
                        capture.readers.append(label)
            ordered = sorted(captures.values(), key=lambda c: (c.first.lineno, c.first.col_offset))
            handled = self._computed_from_own_arguments(d, ordered) if d.api == "custom_gradient" else set()
            for capture in ordered:
                if capture.name not in handled:
                    self._judge(d, capture, [fn for _, fn in functions])

    # -- jax.custom_gradient: values computed outside it from the arguments it is given -----------
    def _computed_from_own_arguments(self, d: CustomDerivative, captures: List[Capture]) -> Set[str]:
        """A custom_gradient defined inside `outer` whose body or vjp function reads a value
        `outer` computes from a parameter it also passes to the custom_gradient as an argument
        (`out, op_vjp = jax.vjp(op, a, b)` then `inner(a, b)` returning `out` and calling
        `op_vjp`): differentiating the custom_gradient with respect to that argument makes the
        value a tracer of the same differentiation, which escapes (UnexpectedTracerError under
        grad, measured: docs/facts/scripts/hazard_custom_gradient_jax1366.py). One report per
        custom_gradient, naming every such value; the names it covers are returned."""
        index = self.model.index
        found: List[Tuple[Capture, List[Root], ast.Call]] = []
        for capture in captures:
            resolved = index.resolve(capture.name, index.scope_of(capture.first))
            if resolved is None or not resolved[0].is_function:
                continue
            scope, bindings = resolved
            usage = [e for fn in self._functions_of(d) for e in usage_evidence(self.model, fn, capture.name)]
            if any(e.key for e in usage):
                continue
            roots: List[Root] = []
            call: Optional[ast.Call] = None
            for root in self._roots(capture.name, scope, bindings, set(), 0):
                if root.param == capture.name and any(e.kind == "callable" for e in usage):
                    continue  # a function the enclosing function is given: it holds no tracer of its own
                passing = self._passes_root(d, root)
                if passing is not None and self._may_be_differentiated(root) and \
                        all(r.param != root.param for r in roots):
                    roots.append(root)
                    call = call or passing
            if roots and call is not None:
                found.append((capture, sorted(roots, key=lambda r: r.param), call))
        if found:
            self.report(found[0][0].first, self._own_arguments_message(d, found))
        return {capture.name for capture, _, _ in found}

    def _functions_of(self, d: CustomDerivative) -> List[FunctionNode]:
        return ([d.primal] if d.primal is not None else []) + [node for _, _, node in self._rules(d)]

    def _passes_root(self, d: CustomDerivative, root: Root) -> Optional[ast.Call]:
        """A call of `d` inside `root.function` whose positional arguments read `root.param` there."""
        for site in d.call_sites:
            if not self.model.index.inside(site.call, root.function):
                continue
            for arg in site.call.args:
                if any(name == root.param and scope.node is root.function for name, scope, _ in self._names_in(arg)):
                    return site.call
        return None

    def _may_be_differentiated(self, root: Root) -> bool:
        """Nothing marks the parameter static: no static annotation, default or use (a name alone
        does not count), not a static argument of the transformation tracing its function, not a
        PRNG key, and not only Python values passed by its callers."""
        traced = self.model.traced.get(root.function)
        if traced is not None and root.param in traced.static_params:
            return False
        evidence = self._root_evidence(root)
        if any(e.key or (e.kind != "array" and not (e.from_name and e.weight <= 1)) for e in evidence):
            return False
        return not self._only_python_values_passed(root.function, root.param)

    def _own_arguments_message(self, d: CustomDerivative, found: List[Tuple[Capture, List[Root], ast.Call]]) -> str:
        outer = getattr(found[0][1][0].function, "name", "<lambda>")
        read = []
        for capture, _, _ in found:
            reader = "its body" if d.name in capture.readers else (
                "the vjp lambda it returns" if "<lambda>" in capture.readers else
                f"the vjp function `{capture.readers[0]}` it returns")
            read.append(f"`{capture.name}` (read by {reader})")
        roots = [root for _, rs, _ in found for root in rs]
        params = sorted({root.param for root in roots})
        names = ", ".join(f"`{p}`" for p in params)
        either = " or ".join(f"`{p}`" for p in params)
        chains = list(dict.fromkeys(root.chain[-1] for root in roots if root.chain))
        computed = f"computed in `{outer}` from {names} ({'; '.join(chains)})" if chains else \
            f"{'a parameter' if len(params) == 1 else 'parameters'} of `{outer}`"
        call = found[0][2]
        vjp_outside = any("jax.vjp(" in chain for chain in chains)
        remedy = (f"Call `jax.vjp` inside `{d.name}` on its own arguments and return that output and pullback"
                  if vjp_outside else f"Compute {'it' if len(found) == 1 else 'them'} inside `{d.name}` from its "
                                      f"own arguments")
        return (f"jax.custom_gradient `{d.name}` is defined inside `{outer}` and closes over {' and '.join(read)}, "
                f"{computed}, which `{outer}` also passes to `{d.name}` as "
                f"{'an argument' if len(params) == 1 else 'arguments'} (`{self.model.quote(call, 50)}`, line "
                f"{call.lineno}). Differentiating `{d.name}` with respect to {either} (what a custom_gradient is "
                f"for) makes the closed-over values tracers of that same differentiation, which escape: grad, "
                f"jit(grad) and vmap(grad) raise UnexpectedTracerError (grad(jit): CustomVJPException or 'No "
                f"constant handler'); eager calls, jit and vmap work. {remedy}")

    # -- what a function reads from enclosing functions ---------------------------------------
    def _free_loads(self, fn: FunctionNode, skip: Sequence[ast.AST] = (),
                    owner: Optional[FunctionNode] = None) -> Iterator[Tuple[ast.Name, Scope]]:
        """Names `fn` reads from functions enclosing `owner` (default `fn`), not looking into `skip`."""
        index = self.model.index
        owner = owner or fn
        if index.enclosing_function(owner) is None:
            return  # a name resolves to `owner`, a scope inside it, or a function enclosing it: none here
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        stack: List[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            if any(node is s for s in skip):
                continue
            stack.extend(child_nodes(node))
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
                continue
            found = index.resolve(node.id, index.scope_of(node))
            if found is None:
                continue
            scope, _ = found
            if not scope.is_function or index.inside(scope.node, owner):
                continue
            yield node, scope

    def _rules(self, d: CustomDerivative) -> List[Tuple[str, str, FunctionNode]]:
        """(role, label, function) of each rule of `d` that resolves here; for a jax.custom_gradient,
        the vjp function its body returns (role `bwd`, label its name or `<lambda>`)."""
        if d.api == "custom_gradient":
            found: List[Tuple[str, str, FunctionNode]] = []
            for pair in self.model.facts.custom_gradient_returns(d):
                if pair.vjp is not None and pair.vjp.node is not None and \
                        not any(pair.vjp.node is f for _, _, f in found):
                    found.append(("bwd", pair.vjp.name or "<lambda>", pair.vjp.node))
            return found
        return [(role, r.name or role, r.node) for role, r in self.model.facts.rules_of(d)  # type: ignore[misc]
                if r.node is not None]

    # -- judging one captured name ------------------------------------------------------------
    def _judge(self, d: CustomDerivative, capture: Capture, functions: List[FunctionNode]) -> None:
        index = self.model.index
        found = index.resolve(capture.name, index.scope_of(capture.first))
        if found is None:
            return
        scope, bindings = found
        roots = self._roots(capture.name, scope, bindings, set(), 0)
        if not roots:
            return
        rules_only = d.kind == "vjp" and d.name not in capture.readers
        if rules_only and self._differentiated_where_defined(d):
            return  # every transformation of the caller works (measured, hazard_closure_messages §1)
        usage = [e for fn in functions for e in usage_evidence(self.model, fn, capture.name)]
        if any(e.kind == "callable" and e.weight >= 3 for e in usage):
            return
        # A PRNG key is never differentiated: only a transformation around the enclosing function
        # (its tracers breaking `grad(jit)`) makes closing over one a problem, not its use as a key.
        usage = [e for e in usage if not e.key]
        for root in roots:
            verdict = Verdict(0, root.param)
            verdict.evidence.extend(e for e in self._root_evidence(root) if not e.key)
            verdict.evidence.extend(usage)
            if root.computed_with:
                verdict.evidence.append(Evidence("array", 2, f"is computed with `{root.computed_with}`"))
            if verdict.level != "array":
                continue
            if d.api == "custom_gradient":
                self.report(capture.first, self._gradient_message(d, capture, root, verdict))
            else:
                self.report(capture.first, self._message(d, capture, root, verdict),
                            fix=self._explicit_argument_fix(d, capture, root, scope))
            return
        self._maybe(d, capture, roots, usage, scope)

    # -- a "may": a parameter of an enclosing function nothing shows traced, used as array data --
    def _maybe(self, d: CustomDerivative, capture: Capture, roots: List[Root], usage: List[Evidence],
               scope: Scope) -> None:
        """JAX raises only if the enclosing function is differentiated with respect to the value,
        which this module does not show. Warn when the primal reads the value (else only
        `grad(jit)` can fail, which needs a known trace) and the derivative rule computes with it
        as array data (the author treats it as a parameter of the maths; a value only the primal
        reads, such as an offset or batched data, is rarely differentiated: jax-ml/jax#5440), and
        nothing marks it static: no static annotation, default or use (a static-sounding name
        alone does not outweigh that use), no caller passing only Python values, not a PRNG key,
        not `self`."""
        if capture.name == "self":
            self._maybe_self_fields(d, capture)
            return
        # A custom_gradient's vjp function closing over the value is warned about too: reading an
        # outer value there is how custom_gradient is written (its documented style is a vjp closing
        # over the body's values), and a traced one breaks `grad` of a `jit`, `checkpoint` or `scan`
        # over it even though it is never differentiated (jax-ml/jax#24545, #25017; measured:
        # docs/facts/scripts/hazard_custom_gradient_closure.py).
        primal_reads = d.name in capture.readers or d.api == "custom_gradient"
        if not primal_reads or any(e.kind != "array" for e in usage):
            return
        use = self._derivative_use(d, capture.name)
        if use is None:
            return
        for root in roots:
            fn = root.function
            if _is_self(root):
                if self._maybe_held(d, capture, self.model.facts.values().name(capture.name, scope), use):
                    return
                continue
            if self.model.traced.get(fn) is not None or isinstance(fn, ast.Lambda):
                continue
            evidence = self._root_evidence(root)
            if any(e.kind != "array" and not (e.from_name and e.weight <= 1) for e in evidence) or \
                    self._only_python_values_passed(fn, root.param):
                continue
            message = (self._gradient_maybe_message(d, capture, root, use) if d.api == "custom_gradient"
                       else self._maybe_message(d, capture, root, use))
            self.report(capture.first, message, severity=Severity.WARNING)
            return

    def _maybe_held(self, d: CustomDerivative, capture: Capture, kind: Kind, use: Tuple[str, str],
                    what: str = "") -> bool:
        """A value read from `self` (`w = self.params["w"]`, `self.beta`) that `vjplint.facts.value_kinds`
        follows to a parameter of the function building the object, which nothing shows traced
        or static: the "may" of a plain parameter, one object away. True when reported."""
        leaf = kind.origin_leaf()
        if leaf is None or not open_parameter(self.model, leaf[1]):
            return False
        fn, param, chain = leaf[1]
        if self._only_python_values_passed(fn, param):  # type: ignore[arg-type]
            return False
        kind_of = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        outer = getattr(fn, "name", "<lambda>")
        reader, quoted = use
        name = what or f"`{capture.name}`"
        fails = ("UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp function "
                 "with respect to a closed-over value'") if d.kind == "vjp" else "UnexpectedTracerError"
        rule = "its cotangent (or None) from bwd" if d.kind == "vjp" else "its tangent from the jvp rule"
        self.report(capture.first, f"{kind_of} `{d.name}` is defined inside `{getattr(d.enclosing, 'name', '?')}` "
                                   f"and closes over {name}, computed from `{outer}`'s parameter `{param}` "
                                   f"({chain}), read by `{d.name}` and used as array data by its rule `{reader}` "
                                   f"(`{quoted}`). Nothing here shows `{outer}` traced, but if it is differentiated "
                                   f"with respect to `{param}`, JAX may raise ({fails}). If `{param}` can be an array "
                                   f"being differentiated, pass {name} as an explicit argument of `{d.name}` "
                                   f"(returning {rule}), or hoist it with `jax.closure_convert`",
                    severity=Severity.WARNING)
        return True

    def _maybe_self_fields(self, d: CustomDerivative, capture: Capture) -> None:
        """The closure reads `self.<field>`: the field's value as `vjplint.facts.value_kinds` follows it
        (the object's constructions in this module), when the primal reads it and a rule uses it
        as array data."""
        if d.primal is None:
            return
        values = self.model.facts.values()
        rules = [(label, node) for role, label, node in self._rules(d) if role in ("bwd", "jvp")]
        seen: Set[str] = set()
        for node in ast.walk(d.primal):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and isinstance(node.ctx, ast.Load)) or node.attr in seen:
                continue
            seen.add(node.attr)
            attr = node.attr

            def reads(n: ast.AST) -> bool:
                return isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name) and \
                    n.value.id == "self" and isinstance(n.ctx, ast.Load)

            use = next(((label, self.model.quote(found, 50)) for label, fn in rules
                        for found in [numeric_use(self.model, fn, reads)] if found is not None), None)
            if use is not None and self._maybe_held(d, capture, values.of(node), use, f"`self.{attr}`"):
                return

    def _derivative_use(self, d: CustomDerivative, name: str) -> Optional[Tuple[str, str]]:
        """(rule, quoted use): the first read of `name` in a bwd or jvp rule as array data
        (arithmetic, a comparison, an argument of a jnp/lax call); None when any read in the
        primal or a rule makes it a PRNG key or a callable."""
        index = self.model.index
        functions: List[Tuple[str, str, FunctionNode]] = [("primal", d.name, d.primal)] if d.primal is not None else []
        functions += self._rules(d)
        found: Optional[Tuple[str, str]] = None
        for role, label, fn in functions:
            for node in ast.walk(fn):
                if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
                    continue
                found_scope = index.resolve(name, index.scope_of(node))
                if found_scope is None or not found_scope[0].is_function or index.inside(found_scope[0].node, fn):
                    continue  # a local of the rule (`x, cos_y = res`), not the closed-over value
                parent = index.parent(node)
                call = parent if isinstance(parent, ast.Call) else None
                qual = (index.qualname(call.func) or "") if call is not None else ""
                if call is not None and (call.func is node or qual.startswith("jax.random.")):
                    return None  # called, or a key: not array data that could be differentiated
                if found is not None or role not in ("bwd", "jvp"):
                    continue
                if isinstance(parent, ast.BinOp) and not (isinstance(parent.op, ast.Pow) and parent.right is node) \
                        or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub) \
                        or isinstance(parent, ast.Compare) and not isinstance(index.parent(parent), (ast.If, ast.IfExp,
                                                                                                     ast.While, ast.Assert)):
                    shown = index.parent(parent) if isinstance(parent, ast.UnaryOp) else parent
                    found = (label, self.model.quote(shown if isinstance(shown, ast.BinOp) else parent, 50))
                elif call is not None and node in call.args and qual.startswith(ARRAY_NAMESPACES) \
                        and qual not in CLEAN_CALLS:
                    found = (label, self.model.quote(call, 50))
        return found

    def _only_python_values_passed(self, fn: FunctionNode, param: str) -> bool:
        """Whether `fn` has callers (here or in other modules of the run) and every one passes a
        static Python value (a literal, a module constant) in `param`'s place or leaves it at a
        default that is one: those callers cannot differentiate it."""
        return static_at_every_call(self.model, fn, param)

    def _maybe_message(self, d: CustomDerivative, capture: Capture, root: Root, use: Tuple[str, str]) -> str:
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        outer = getattr(root.function, "name", "<lambda>")
        reader, quoted = use
        if root.param == capture.name:
            what = f"`{capture.name}`, a parameter of `{outer}`,"
        else:
            via = f" ({root.chain[-1]})" if root.chain else ""
            what = f"`{capture.name}`, computed from `{outer}`'s parameter `{root.param}`{via},"
        fails = ("UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp function "
                 "with respect to a closed-over value'") if d.kind == "vjp" else "UnexpectedTracerError"
        rule = "its cotangent (or None) from bwd" if d.kind == "vjp" else "its tangent from the jvp rule"
        return (f"{kind} `{d.name}` is defined inside `{outer}` and closes over {what} read by `{d.name}` and "
                f"used as array data by its rule `{reader}` (`{quoted}`). Nothing here shows `{outer}` traced, but "
                f"if it is differentiated with respect to `{root.param}`, JAX may raise ({fails}). If `{root.param}` can be an array being "
                f"differentiated, pass `{capture.name}` as an explicit argument of `{d.name}` (returning {rule}), "
                f"or hoist it with `jax.closure_convert`")

    # -- jax.custom_gradient: the body is the primal, the vjp function it returns the bwd rule ---------
    def _gradient_what(self, d: CustomDerivative, capture: Capture, root: Root) -> Tuple[str, str, bool]:
        """(who reads the value, in words; how to pass it; whether only the vjp function reads it)."""
        vjps = [r for r in capture.readers if r != d.name]
        vjp = " and ".join("the vjp lambda it returns" if r == "<lambda>" else f"the vjp function `{r}` it returns"
                           for r in vjps)
        if d.name in capture.readers:
            readers = f"its body and {vjp}" if vjps else "its body"
        else:
            readers = vjp
        passed = (f"Pass `{capture.name}` as an explicit argument of `{d.name}` (its vjp function then returns a "
                  f"cotangent for it, `None` when it is not differentiated), or hoist it with `jax.closure_convert`")
        return readers, passed, d.name not in capture.readers

    def _gradient_message(self, d: CustomDerivative, capture: Capture, root: Root, verdict: Verdict) -> str:
        outer, what = _evidence(capture, root, verdict)
        readers, passed, vjp_only = self._gradient_what(d, capture, root)
        head = (f"jax.custom_gradient `{d.name}` is defined inside `{outer}` and closes over `{capture.name}` (read "
                f"by {readers}): {what}.")
        staged = ("`jax.grad(jax.jit(...))` around the caller fails with 'No constant handler for type "
                  "DynamicJaxprTracer' (`jax.grad(jax.checkpoint(...))` with UnexpectedTracerError)")
        if vjp_only:
            return (f"{head} custom_gradient cannot close over tracers even when they are not differentiated "
                    f"(jax-ml/jax#24545): eager calls, jit, vmap, grad and jit(grad) work, but {staged}. {passed}")
        return (f"{head} Differentiating `{d.name}` with respect to `{root.param}` fails (UnexpectedTracerError, or "
                f"CustomVJPException 'Detected differentiation of a custom_vjp function with respect to a closed-over "
                f"value' when staged by jit), and {staged} even when it is not differentiated. {passed}")

    def _gradient_maybe_message(self, d: CustomDerivative, capture: Capture, root: Root,
                                use: Tuple[str, str]) -> str:
        outer = getattr(root.function, "name", "<lambda>")
        _, quoted = use
        if root.param == capture.name:
            what = f"`{capture.name}`, a parameter of `{outer}`,"
        else:
            via = f" ({root.chain[-1]})" if root.chain else ""
            what = f"`{capture.name}`, computed from `{outer}`'s parameter `{root.param}`{via},"
        readers, passed, vjp_only = self._gradient_what(d, capture, root)
        differentiated = ("" if vjp_only else f"; differentiating it with respect to `{root.param}` raises "
                          f"UnexpectedTracerError")
        return (f"jax.custom_gradient `{d.name}` is defined inside `{outer}` and closes over {what} read by {readers} "
                f"and used there as array data (`{quoted}`). Nothing here shows `{outer}` traced, but custom_gradient "
                f"cannot close over tracers even when they are not differentiated (jax-ml/jax#24545): if `{outer}` "
                f"is traced inside a differentiation, `jax.grad(jax.jit(...))` may fail with 'No constant handler "
                f"for type DynamicJaxprTracer' (`jax.grad(jax.checkpoint(...))` with UnexpectedTracerError)"
                f"{differentiated}. If `{root.param}` can be an array, {passed[0].lower()}{passed[1:]}")

    def _explicit_argument_fix(self, d: CustomDerivative, capture: Capture, root: Root, scope: Scope) -> Optional[Fix]:
        """Pass the value as `d`'s new leading argument (vjplint.plans.closure_plan), when the
        value is an array: the parameter itself, or computed from it with a jnp/lax call (an
        object would have to be a registered pytree to be an argument)."""
        if not (capture.name == root.param or root.computed_with):
            return None
        try:
            edits = (closure_edits if d.kind == "vjp" else closure_edits_jvp)(self.model, d, capture.name, scope)
        except Refusal:
            return None
        exact = d.name not in capture.readers  # only the rules read it: no gradient reached it before either
        how = "bwd returns None for it" if d.kind == "vjp" else "the jvp rule ignores its tangent"
        return self.editing(Applicability.SAFE if exact else Applicability.UNSAFE,
                            f"Pass `{capture.name}` to `{d.name}` as an explicit argument ({how})", edits)

    def _differentiated_where_defined(self, d: CustomDerivative) -> bool:
        """Whether `d` is only used, in the function that defines it, as the function a reverse-mode
        transformation applied there differentiates (`return jax.grad(f)(1.)`): its rules then run
        inside that function's own trace, so a value they close over never leaves it."""
        index = self.model.index
        owner = d.enclosing
        if owner is None:
            return False
        rules = [node for _, _, node in self._rules(d)]
        uses = [n for n in ast.walk(owner) if isinstance(n, ast.Name) and n.id == d.name
                and isinstance(n.ctx, ast.Load) and not any(index.inside(n, r) for r in rules)]
        if not uses:
            return False
        for use in uses:
            parent = index.parent(use)
            if isinstance(parent, ast.Attribute) and parent.attr in ("defvjp", "defjvp"):
                continue
            if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is use
                    and index.qualname(parent.func) in REVERSE_MODE):
                return False
        return True

    def _roots(self, name: str, scope: Scope, bindings: List[Binding], seen: Set[Tuple[str, int]],
               depth: int) -> List[Root]:
        """The parameters `name` (bound in function `scope`) is computed from."""
        key = (name, id(scope.node))
        if key in seen or depth > 8 or not scope.is_function:
            return []
        seen.add(key)
        fn: FunctionNode = scope.node  # type: ignore[assignment]
        if any(b.kind == "assign" and _is_clean_assignment(self.model.index, b) for b in bindings):
            return []  # `v = jax.lax.stop_gradient(...)` / `jax.closure_convert(...)`
        roots: List[Root] = []
        for b in bindings:
            if b.kind == "param":
                roots.append(Root(name, fn))
            elif b.kind == "assign":
                value = _assigned_value(b)
                if value is None:
                    continue
                for inner, inner_scope, inner_bindings in self._names_in(value):
                    for root in self._roots(inner, inner_scope, inner_bindings, seen, depth + 1):
                        root.chain.append(f"`{self.model.quote(b.node, 70)}`")
                        root.computed_with = root.computed_with or self._array_call(value)
                        roots.append(root)
        return roots

    def _names_in(self, expr: ast.expr) -> Iterator[Tuple[str, Scope, List[Binding]]]:
        """Names read by `expr` that live in function scopes, skipping static and clean parts."""
        index = self.model.index
        stack: List[ast.AST] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, FUNCTION_TYPES):
                continue
            if isinstance(node, ast.Attribute) and node.attr in STATIC_ATTRIBUTES:
                continue
            if isinstance(node, ast.Call) and (index.qualname(node.func) or "") in CLEAN_CALLS:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found = index.resolve(node.id, index.scope_of(node))
                if found is not None and found[0].is_function:
                    yield node.id, found[0], found[1]
                continue
            stack.extend(child_nodes(node))

    def _array_call(self, value: ast.expr) -> Optional[str]:
        for node in ast.walk(value):
            if isinstance(node, ast.Call):
                q = self.model.index.qualname(node.func) or ""
                if q.startswith(ARRAY_NAMESPACES) and q not in CLEAN_CALLS:
                    return self.model.quote(node, 50)
        return None

    # -- evidence that a root parameter holds tracers -------------------------------------------
    def _root_evidence(self, root: Root) -> List[Evidence]:
        fn, param = root.function, root.param
        sig = Signature.of(fn)
        evidence: List[Evidence] = []
        traced = self.model.traced.get(fn)
        if traced is not None and param not in traced.static_params and (param in sig.positional
                                                                          or param == sig.vararg):
            # equinox's filter_* transforms trace only array leaves: other parameters stay static.
            weight = 2 if traced.how.startswith("equinox.") else 3
            evidence.append(Evidence("array", weight, f"is a parameter of {describe_traced(traced)}"))
        evidence.extend(annotation_evidence(self.model, sig.annotations.get(param), param))
        if param in sig.defaults:
            evidence.extend(default_evidence(self.model, sig.defaults[param]))
        evidence.extend(name_evidence(param))
        evidence.extend(usage_evidence(self.model, fn, param))
        evidence.extend(self._call_site_evidence(fn, param, sig))
        return evidence

    def _call_site_evidence(self, fn: FunctionNode, param: str, sig: Signature) -> List[Evidence]:
        """`fn` called from traced code with a traced argument in `param`'s place (or, for `self`,
        its class built there from traced values)."""
        if isinstance(fn, ast.Lambda):
            return []
        index = self.model.index
        parent_scope = index.scope_of(fn)
        is_self = parent_scope.is_class and sig.positional[:1] == [param]
        evidence = []
        if param in sig.positional and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for call in external_calls(self.model, fn.name, fn):  # callers in other modules of the run
                arg = call.arg(sig.positional.index(param), param)
                if arg is not None and arg.traced and arg.tag != "callable":
                    return [Evidence("array", 3, f"receives tracers: `{fn.name}` is called at {call.where} with "
                                                 f"`{arg.quoted}` ({arg.traced})")]
        target = parent_scope.node if is_self else fn
        for call in self.model.facts.calls_of_name(getattr(target, "name", "")):  # only a def binds its name
            if not self._resolves_to(call.func, target):  # type: ignore[arg-type]
                continue
            enclosing = index.enclosing_function(call)
            traced = self.model.traced.get(enclosing) if enclosing is not None else None
            if traced is None:
                continue
            if is_self:
                args = [*call.args, *(k.value for k in call.keywords)]
            else:
                position = sig.positional.index(param) if param in sig.positional else -1
                arg = argument_at(call, position, param) if position >= 0 else None
                args = [arg] if arg is not None else []
            for arg in args:
                reason = self.model.facts.traced_reason(arg, enclosing, traced)
                if reason is not None:
                    built = f"`{param}` is a `{call.func.id}` built" if is_self else f"`{call.func.id}` is called"  # type: ignore[attr-defined]
                    evidence.append(Evidence("array", 3, f"receives tracers: {built} at line {call.lineno} "
                                                         f"with `{self.model.quote(arg, 40)}` ({reason})", call.lineno))
                    return evidence
        return evidence

    def _resolves_to(self, name: ast.Name, target: ast.AST) -> bool:
        return any(b.node is target for b in self.model.index.lookup(name.id, self.model.index.scope_of(name)))

    # -- the message ----------------------------------------------------------------------------
    def _message(self, d: CustomDerivative, capture: Capture, root: Root, verdict: Verdict) -> str:
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        outer, what = _evidence(capture, root, verdict)
        target = "the values `self` holds" if _is_self(root) else f"`{root.param}`"
        passed = "the arrays `self` holds" if capture.name == "self" else f"`{capture.name}`"
        readers = ", ".join(f"`{r}`" for r in capture.readers)
        if d.kind == "vjp":
            fails = ("UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp "
                     "function with respect to a closed-over value' when the call is staged by jit/checkpoint/scan")
        else:
            fails = "UnexpectedTracerError"
        rule = "its cotangent (or None) from bwd" if d.kind == "vjp" else "its tangent from the jvp rule"
        head = (f"{kind} `{d.name}` is defined inside `{outer}` and closes over `{capture.name}` (read in "
                f"{readers}): {what}.")
        remedy = (f"Pass {passed} as an explicit argument of `{d.name}` (returning {rule}), or hoist it with "
                  f"`jax.closure_convert`")
        if d.kind == "vjp" and d.name not in capture.readers:
            # Measured (hazard_closure_messages.py §2): read only by fwd/bwd, eager, jit, vmap and grad
            # of any argument work; only grad of a jit around the caller fails.
            return (f"{head} Only the rules read it, so eager calls, jit, vmap and grad work (with respect to "
                    f"{target} too: the primal does not read it, so it gets no derivative through "
                    f"`{d.name}`), but `jax.grad(jax.jit(...))` around the caller fails with 'No constant "
                    f"handler for type DynamicJaxprTracer'. {remedy}")
        return (f"{head} Differentiating `{d.name}` with respect to {target} fails ({fails}), and "
                f"`jax.grad(jax.jit(...))` fails with 'No constant handler for type DynamicJaxprTracer' even "
                f"when it is not differentiated. {remedy}")


def _assigned_value(b: Binding) -> Optional[ast.expr]:
    if b.value is not None:
        return b.value
    node = b.node
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        return node.value
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return node.iter
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return node.items[0].context_expr if len(node.items) == 1 else None
    return None


def _is_clean_assignment(index, b: Binding) -> bool:
    value = _assigned_value(b)
    return isinstance(value, ast.Call) and index.qualname(value.func) in (
        "jax.lax.stop_gradient", "jax.closure_convert", "jax.custom_derivatives.closure_convert")


def _is_self(root: Root) -> bool:
    fn = root.function
    if isinstance(fn, ast.Lambda):
        return False
    positional = [*fn.args.posonlyargs, *fn.args.args]
    return bool(positional) and positional[0].arg == root.param == "self"


def _evidence(capture: Capture, root: Root, verdict: Verdict) -> Tuple[str, str]:
    """The enclosing function's name, and why the captured value is traced, for the messages."""
    outer = getattr(root.function, "name", "<lambda>")
    evidence = verdict.best("array")
    assert evidence is not None
    if root.param == capture.name:
        return outer, f"`{root.param}` {evidence.reason}"
    via = f" ({root.chain[-1]})" if root.chain else ""
    return outer, f"`{capture.name}` is computed from `{root.param}`{via}; `{root.param}` {evidence.reason}"
