"""Closures: what a custom derivative defined inside a function reads from the functions around
it, the parameters those values come from, and whether they may hold tracers. VJP201 reports the
findings; this module only finds them (no wording beyond the evidence's own reasons)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from vjplint.facts.crossmodule import external_calls
from vjplint.facts.infer import argument_at
from vjplint.facts.param_evidence import (Evidence, Verdict, annotation_evidence, default_evidence, name_evidence,
                                          open_parameter, usage_evidence)
from vjplint.facts.kinds import Kind
from vjplint.facts.values import describe_traced, numeric_use
from vjplint.model.file_model import CustomDerivative, FileModel, Signature
from vjplint.model.jaxapi import ARRAY_NAMESPACES, STATIC_ATTRIBUTES
from vjplint.model.semantic import FUNCTION_TYPES, Binding, FunctionNode, Scope, SemanticIndex, child_nodes
from vjplint.syntax.walk import walk

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


# -- what `findings` returns: at most one per captured name, in the order of their first reads ----
@dataclass
class OwnArguments:
    """A custom_gradient reading values its enclosing function computes from parameters it also
    passes to the custom_gradient: (capture, its roots, the call passing them) each; the call of
    the first is the one quoted."""

    found: List[Tuple[Capture, List[Root], ast.Call]]


@dataclass
class Traced:
    """`capture` comes from `root`, which the verdict shows to hold tracers; `scope` binds it."""

    capture: Capture
    root: Root
    verdict: Verdict
    scope: Scope


@dataclass
class MayBeTraced:
    """`capture` comes from `root`, which nothing shows traced or static, and a rule uses it as
    array data: `use` is (the rule's label, the use quoted)."""

    capture: Capture
    root: Root
    use: Tuple[str, str]


@dataclass
class MayBeHeld:
    """`capture` (or `self.<field>`, `what`) is held by an object built from parameter `param` of
    `function`, which nothing shows traced or static; `chain` says how, `use` as in MayBeTraced."""

    capture: Capture
    function: FunctionNode
    param: str
    chain: str
    use: Tuple[str, str]
    what: str = ""


Finding = Union[OwnArguments, Traced, MayBeTraced, MayBeHeld]


def _attribute_stores(index: SemanticIndex) -> Tuple[bool, Dict[str, List[Tuple[ast.Attribute, Optional[ast.expr]]]]]:
    """(whether the module calls `setattr`, each attribute name's stores: every `Attribute` inside
    an assignment's target other than a plain name, with the value stored when the target is
    that attribute itself and not an augmented assignment, else None). Once per module, from the
    index's tables of calls and assignments: VJP201's constant-field check walked the whole
    module again for every capture of `self` (0.13 s of the JAX tree's cold lint), then once."""
    any_setattr = any(isinstance(n.func, ast.Name) and n.func.id == "setattr" for n in index.of_type(ast.Call))
    stores: Dict[str, List[Tuple[ast.Attribute, Optional[ast.expr]]]] = {}
    for node in (*index.of_type(ast.Assign), *index.of_type(ast.AugAssign), *index.of_type(ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                continue  # a plain name stores no attribute
            value = node.value if isinstance(target, ast.Attribute) and not isinstance(node, ast.AugAssign) else None
            for t in walk(target):
                if isinstance(t, ast.Attribute):
                    stores.setdefault(t.attr, []).append((t, value))
    return any_setattr, stores


SHAPE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size"})
SHAPE_FUNCTIONS = frozenset({*(f"jax.numpy.{f}" for f in ("zeros_like", "ones_like", "empty_like", "full_like", "shape",
                                                          "ndim", "size", "result_type")),
                             "builtins.len"})


class Closures:
    """The closure findings of one module's custom derivatives."""

    def __init__(self, model: FileModel) -> None:
        self.model = model

    def findings(self, d: CustomDerivative) -> List[Finding]:
        """What `d`'s primal and rules read from enclosing functions, judged: an `OwnArguments`
        first for a custom_gradient, then one finding per other captured name that may fail."""
        functions: List[Tuple[str, FunctionNode]] = []
        if d.primal is not None:
            functions.append((d.name, d.primal))
        for role, label, node in self.rules(d):
            functions.append((label, node))
        vjps = [node for _, _, node in self.rules(d)] if d.api == "custom_gradient" else []
        captures: Dict[Tuple[str, int], Capture] = {}
        read_as_data: Set[Tuple[str, int]] = set()  # read beyond its shape and dtype somewhere
        for label, fn in functions:
            # A custom_gradient's vjp function lives in its body: the body's reads exclude it,
            # and the vjp's reads of the body's own values (its inputs) are the design.
            skip = [v for v in vjps if v is not fn]
            owner = d.primal if fn in vjps and d.primal is not None else fn
            for load, scope in self._free_loads(fn, skip, owner):
                key = (load.id, scope.node)
                if not self._shape_only(load):
                    read_as_data.add(key)
                capture = captures.setdefault(key, Capture(load.id, load))
                if (load.lineno, load.col_offset) < (capture.first.lineno, capture.first.col_offset):
                    capture.first = load
                if label not in capture.readers:
                    capture.readers.append(label)
        # a value read only for its shape or dtype (`jnp.zeros_like(x0)` in bwd) is no data of the
        # rules: JAX stages no constant for it, so no transformation fails (measured on JAX 0.10.2)
        ordered = sorted((c for k, c in captures.items() if k in read_as_data),
                         key=lambda c: (c.first.lineno, c.first.col_offset))
        found: List[Finding] = []
        handled: Set[str] = set()
        if d.api == "custom_gradient":
            own = self._computed_from_own_arguments(d, ordered)
            if own:
                found.append(OwnArguments(own))
            handled = {capture.name for capture, _, _ in own}
        for capture in ordered:
            if capture.name not in handled:
                finding = self._judge(d, capture, [fn for _, fn in functions])
                if finding is not None:
                    found.append(finding)
        return found

    def _shape_only(self, load: ast.Name) -> bool:
        """`load` reads only the value's shape or dtype: `x.shape`, `x.dtype`, `jnp.zeros_like(x)`,
        `jnp.shape(x)`, `len(x)`."""
        index = self.model.index
        parent = index.parent(load)
        if isinstance(parent, ast.Attribute) and parent.value is load:
            return parent.attr in SHAPE_ATTRIBUTES
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is load:
            return (index.qualname(parent.func) or "") in SHAPE_FUNCTIONS
        return False

    def _computed_from_own_arguments(self, d: CustomDerivative,
                                     captures: List[Capture]) -> List[Tuple[Capture, List[Root], ast.Call]]:
        """A custom_gradient defined inside `outer` whose body or vjp function reads a value
        `outer` computes from a parameter it also passes to the custom_gradient as an argument
        (`out, op_vjp = jax.vjp(op, a, b)` then `inner(a, b)` returning `out` and calling
        `op_vjp`): differentiating the custom_gradient with respect to that argument makes the
        value a tracer of the same differentiation, which escapes (UnexpectedTracerError under
        grad, measured: docs/facts/scripts/hazard_custom_gradient_jax1366.py). One report per
        custom_gradient, naming every such value."""
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
        return found

    def _functions_of(self, d: CustomDerivative) -> List[FunctionNode]:
        return ([d.primal] if d.primal is not None else []) + [node for _, _, node in self.rules(d)]

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

    def rules(self, d: CustomDerivative) -> List[Tuple[str, str, FunctionNode]]:
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
    def _judge(self, d: CustomDerivative, capture: Capture, functions: List[FunctionNode]) -> Optional[Finding]:
        index = self.model.index
        found = index.resolve(capture.name, index.scope_of(capture.first))
        if found is None:
            return None
        scope, bindings = found
        roots = self._roots(capture.name, scope, bindings, set(), 0)
        roots = [r for r in roots if not (is_self(r) and self._constant_fields(r, capture.name, functions))]
        if not roots:
            return None
        rules_only = d.kind == "vjp" and d.name not in capture.readers
        if rules_only and self._differentiated_where_defined(d):
            return None  # every transformation of the caller works (measured, hazard_closure_messages §1)
        usage = [e for fn in functions for e in usage_evidence(self.model, fn, capture.name)]
        if any(e.kind == "callable" and e.weight >= 3 for e in usage):
            return None
        # A PRNG key is never differentiated: only a transformation around the enclosing function
        # (its tracers breaking `grad(jit)`) makes closing over one a problem, not its use as a key.
        usage = [e for e in usage if not e.key]
        # A parameter every call fills with a concrete value (a call made at import, a module global)
        # never holds a tracer.
        roots = [r for r in roots if not self.model.facts.concrete_at_every_call(r.function, r.param)]
        if not roots:
            return None
        for root in roots:
            verdict = Verdict(0, root.param)
            evidence = [e for e in self._root_evidence(root) if not e.key]
            evidence += usage
            if is_self(root):  # `self.step_size` with `step_size=1.0`: the object holds no array there
                evidence = [e for e in evidence if not self._hyperparameter_use(root, e)]
            verdict.evidence.extend(evidence)
            if root.computed_with:
                verdict.evidence.append(Evidence("array", 2, f"is computed with `{root.computed_with}`"))
            if verdict.level == "array":
                return Traced(capture, root, verdict, scope)
        return self._maybe(d, capture, roots, usage, scope)

    # -- a "may": a parameter of an enclosing function nothing shows traced, used as array data --
    def _maybe(self, d: CustomDerivative, capture: Capture, roots: List[Root], usage: List[Evidence],
               scope: Scope) -> Optional[Finding]:
        """JAX raises only if the enclosing function is differentiated with respect to the value,
        which this module does not show. Warn when the primal reads the value (else only
        `grad(jit)` can fail, which needs a known trace) and the derivative rule computes with it
        as array data (the author treats it as a parameter of the maths; a value only the primal
        reads, such as an offset or batched data, is rarely differentiated: jax-ml/jax#5440), and
        nothing marks it static: no static annotation, default or use (a static-sounding name
        alone does not outweigh that use), no caller passing only Python values, not a PRNG key,
        not `self`."""
        if capture.name == "self":
            return self._maybe_self_fields(d, capture)
        # A custom_gradient's vjp function closing over the value is warned about too: reading an
        # outer value there is how custom_gradient is written (its documented style is a vjp closing
        # over the body's values), and a traced one breaks `grad` of a `jit`, `checkpoint` or `scan`
        # over it even though it is never differentiated (jax-ml/jax#24545, #25017; measured:
        # docs/facts/scripts/hazard_custom_gradient_closure.py).
        primal_reads = d.name in capture.readers or d.api == "custom_gradient"
        if not primal_reads or any(e.kind != "array" for e in usage):
            return None
        use = self._derivative_use(d, capture.name)
        if use is None:
            return None
        for root in roots:
            fn = root.function
            if is_self(root):
                held = self._maybe_held(capture, self.model.facts.values().name(capture.name, scope), use)
                if held is not None:
                    return held
                continue
            if self.model.traced.get(fn) is not None or isinstance(fn, ast.Lambda):
                continue
            evidence = self._root_evidence(root)
            if any(e.kind != "array" and not (e.from_name and e.weight <= 1) for e in evidence) or \
                    self._only_python_values_passed(fn, root.param):
                continue
            return MayBeTraced(capture, root, use)
        return None

    def _maybe_held(self, capture: Capture, kind: Kind, use: Tuple[str, str], what: str = "") -> Optional[MayBeHeld]:
        """A value read from `self` (`w = self.params["w"]`, `self.beta`) that `vjplint.facts.value_kinds`
        follows to a parameter of the function building the object, which nothing shows traced
        or static: the "may" of a plain parameter, one object away."""
        leaf = kind.origin_leaf()
        if leaf is None or not open_parameter(self.model, leaf[1]):
            return None
        fn, param, chain = leaf[1]
        if self._only_python_values_passed(fn, param):  # type: ignore[arg-type]
            return None
        return MayBeHeld(capture, fn, param, chain, use, what)  # type: ignore[arg-type]

    def _maybe_self_fields(self, d: CustomDerivative, capture: Capture) -> Optional[MayBeHeld]:
        """The closure reads `self.<field>`: the field's value as `vjplint.facts.value_kinds` follows it
        (the object's constructions in this module), when the primal reads it and a rule uses it
        as array data."""
        if d.primal is None:
            return None
        values = self.model.facts.values()
        rules = [(label, node) for role, label, node in self.rules(d) if role in ("bwd", "jvp")]
        seen: Set[str] = set()
        for node in walk(d.primal):
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
            held = self._maybe_held(capture, values.of(node), use, f"`self.{attr}`") if use is not None else None
            if held is not None:
                return held
        return None

    def _derivative_use(self, d: CustomDerivative, name: str) -> Optional[Tuple[str, str]]:
        """(rule, quoted use): the first read of `name` in a bwd or jvp rule as array data
        (arithmetic, a comparison, an argument of a jnp/lax call); None when any read in the
        primal or a rule makes it a PRNG key or a callable."""
        index = self.model.index
        functions: List[Tuple[str, str, FunctionNode]] = [("primal", d.name, d.primal)] if d.primal is not None else []
        functions += self.rules(d)
        found: Optional[Tuple[str, str]] = None
        for role, label, fn in functions:
            for node in walk(fn):
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
        return self.model.facts.static_at_every_call(fn, param)


    def _differentiated_where_defined(self, d: CustomDerivative) -> bool:
        """Whether `d` is only used, in the function that defines it, as the function a reverse-mode
        transformation applied there differentiates (`return jax.grad(f)(1.)`): its rules then run
        inside that function's own trace, so a value they close over never leaves it."""
        index = self.model.index
        owner = d.enclosing
        if owner is None:
            return False
        rules = [node for _, _, node in self.rules(d)]
        uses = [n for n in walk(owner) if isinstance(n, ast.Name) and n.id == d.name
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
        key = (name, scope.node)
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
        for node in walk(value):
            if isinstance(node, ast.Call):
                q = self.model.index.qualname(node.func) or ""
                if q.startswith(ARRAY_NAMESPACES) and q not in CLEAN_CALLS:
                    return self.model.quote(node, 50)
        return None

    # -- evidence that a root parameter holds tracers -------------------------------------------
    def _constant_fields(self, root: Root, name: str, functions: List[FunctionNode]) -> bool:
        """`self` is read by the custom function only as `self.attr`, and every such attribute is
        a method of the class or is stored only by the class, as `self.attr = value` with a
        constant (a literal, a tuple of them, a module-level name): whoever builds the object
        cannot put a tracer there (`self.C = _C` in an `__init__` without parameters)."""
        scope = self.model.index.scope_of(root.function)
        if not scope.is_class or not isinstance(scope.node, ast.ClassDef):
            return False
        cls = scope.node
        methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        read: Set[str] = set()
        walked = self.model.facts.walk  # kept per node: this runs for every capture of `self`
        for fn in functions:
            nodes = walked(fn)
            loads = [n for n in nodes if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
            owners = [n for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                      and n.value.id == name and isinstance(n.ctx, ast.Load)]
            if len(loads) != len(owners):
                return False  # `self` itself passed on, returned or stored
            read.update(a.attr for a in owners)
        fields = read - methods
        if not fields:
            return False
        # (keyed by the module's index: a table of the whole module, asked per capture of `self`)
        any_setattr, stores = self.model.index.of_node(_attribute_stores, self.model.index)
        if any_setattr:
            return False  # `setattr(obj, "C", ...)` may store anything
        index = self.model.index  # a store's ancestors, not a set of the class's every node (a test class: thousands)
        for f in fields:
            if not stores.get(f):
                return False
            for t, value in stores[f]:
                if not index.inside(t, cls) or not (isinstance(t.value, ast.Name) and t.value.id == "self") or \
                        value is None or not self._module_constant(value):
                    return False
        return True

    def _hyperparameter_use(self, root: Root, e: Evidence) -> bool:
        """An array use of `self` (`self.step_size` in `while_loop(..., self.step_size)`) whose
        fields on that line are all hyperparameters: stored by the class only from a constant or
        from a parameter of the storing method that defaults to a Python number, string or bool.
        That use shows a number, not an array the object holds (a caller passing an array there
        is the "may", not shown here)."""
        scope = self.model.index.scope_of(root.function)
        if e.kind != "array" or not e.from_usage or not e.line or not isinstance(scope.node, ast.ClassDef):
            return False
        cls = scope.node
        fields = {n.attr for n in walk(root.function) if isinstance(n, ast.Attribute) and getattr(n, "lineno", 0) == e.line
                  and isinstance(n.value, ast.Name) and n.value.id == root.param and isinstance(n.ctx, ast.Load)}
        any_setattr, stores = self.model.index.of_node(_attribute_stores, self.model.index)
        if not fields or any_setattr:
            return False
        for f in fields:
            found = stores.get(f)
            if not found:
                return False
            for t, value in found:
                inside = self.model.index.inside(t, cls)
                if not inside and isinstance(t.value, ast.Name) and t.value.id == "self":
                    continue  # another class's own field of the same name
                if not inside or value is None or not (self._module_constant(value) or self._literal_default(value)):
                    return False
        return True

    def _literal_default(self, value: ast.expr) -> bool:
        """`value` is a parameter of the function storing it, defaulting to a Python literal."""
        if not isinstance(value, ast.Name):
            return False
        fn = self.model.index.enclosing_function(value)
        if fn is None:
            return False
        default = self.model.signature(fn).defaults.get(value.id)
        return default is not None and self._module_constant(default) and not (
            isinstance(default, ast.Constant) and default.value is None)

    def _module_constant(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.UnaryOp):
            return isinstance(value.operand, ast.Constant)
        if isinstance(value, ast.Tuple):
            return all(self._module_constant(e) for e in value.elts)
        if isinstance(value, ast.Name):
            found = self.model.index.resolve(value.id, self.model.index.scope_of(value))
            return found is not None and found[0] is self.model.index.module_scope and \
                all(b.kind == "assign" for b in found[1])
        return False

    def _root_evidence(self, root: Root) -> List[Evidence]:
        fn, param = root.function, root.param
        sig = self.model.signature(fn)
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


def is_self(root: Root) -> bool:
    fn = root.function
    if isinstance(fn, ast.Lambda):
        return False
    positional = [*fn.args.posonlyargs, *fn.args.args]
    return bool(positional) and positional[0].arg == root.param == "self"


