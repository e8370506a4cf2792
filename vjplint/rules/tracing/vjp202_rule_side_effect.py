from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.jaxapi import STATIC_ATTRIBUTES
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.model.semantic import Binding, Scope
from vjplint.rules.tracing._assigned_targets import flatten_targets, has_at_update, root_name

# Methods that only mutable containers have: flagged on any outer object.
CONTAINER_ONLY = frozenset({"append", "extend", "insert", "appendleft", "extendleft", "setdefault", "popitem"})
# Methods other objects have too (`optimizer.update(...)` is pure): flagged only on outer names
# bound to a container literal or constructor.
CONTAINER_TOO = frozenset({"update", "add", "pop", "clear", "remove", "discard"})
STATIC_CALLS = frozenset({"builtins.type", "builtins.len", "builtins.isinstance", "builtins.bool", "builtins.str",
                          "builtins.repr", "builtins.id", "builtins.callable", "builtins.hasattr"})
# jax functions returning static values (structure, abstract values), under any module path.
STATIC_JAX_CALLS = frozenset({"tree_structure", "structure", "typeof", "get_aval", "ShapeDtypeStruct"})
# builtins whose result is static when their one argument is: `tuple(kwargs.keys())`, `sorted(names)`.
STATIC_OF_STATIC = frozenset({"builtins.tuple", "builtins.list", "builtins.sorted", "builtins.frozenset"})
CONTAINER_MAKERS = frozenset({"builtins.list", "builtins.dict", "builtins.set", "collections.deque",
                              "collections.defaultdict", "collections.OrderedDict", "collections.Counter"})


class RuleSideEffect(Rule):
    """## What it does
    Flags a custom_vjp `fwd`/`bwd` or custom_jvp rule that assigns a `global` or `nonlocal`
    name, or mutates an object defined outside the rule: `outer_list.append(...)`,
    `outer_dict[key] = ...`, `outer.attr = ...`, `cache.update(...)` on an outer dict.
    Not flagged: state that is local to an enclosing rule (a custom derivative defined and used
    inside another rule assigns the outer rule's `nonlocal`, within one call of it), host
    functions of `jax.pure_callback` / `io_callback` / `jax.debug.callback` (they run on the
    host, with concrete values, at execution time), an attribute swapped in and put back
    (`old = self.w; self.w = w; ...; self.w = old`), and static metadata (treedefs, shapes).

    ## Why is this bad?
    Rules are traced, not run per call. Under `jit` the rule runs once per compilation, so
    counters and logs are wrong, and what it stores are tracers: using them later raises
    `UnexpectedTracerError: Encountered an unexpected tracer ... A function transformed by JAX had
    a side effect`. Without `jit`, bwd runs only under differentiation and may run more than once
    (`grad` of `grad`, `jacrev`), and fwd's stored values are tracers of the outer transformation.

    ## Example
    ```python
    saved = []

    def f_bwd(x, g):
        saved.append(x)           # a tracer under jit(grad)
        return (jnp.cos(x) * g,)
    ```

    ## Use instead
    Return what you need (as an output or in the residuals), or log with
    `jax.debug.callback` / `jax.debug.print`, which run at execution time.

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP202"
    NAME = "rule-side-effect"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax
import jax.numpy as jnp

saved = []

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(x, g):
    saved.append(x)
    return (jnp.cos(x) * g,)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(x, g):
    grads = []
    grads.append(jnp.cos(x) * g)
    return tuple(grads)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for role, rule in self.model.facts.rules_of(d):
            if rule.node in self._done:
                continue
            self._done.add(rule.node)
            self._check_rule(d, role, rule)

    def _check_rule(self, d: CustomDerivative, role: str, rule: RuleFunction) -> None:
        fn = rule.node
        assert fn is not None
        label = f"{role} rule `{rule.name or getattr(fn, 'name', '<lambda>')}` of `{d.name}`"
        reported: Set[str] = set()
        for node in self.model.facts.own_nodes(fn):  # type: ignore[arg-type]
            found = self._side_effect(fn, node)
            if found is None:
                continue
            name, what = found
            if name in reported:
                continue
            reported.add(name)
            stores = not (isinstance(node, ast.AugAssign) and isinstance(node.value, ast.Constant))
            leak = (", and what it stores are tracers: using them later raises UnexpectedTracerError "
                    "('Encountered an unexpected tracer')") if stores else ""
            self.report(node, (
                f"the {label} {what}: rules run only under differentiation, once per trace rather than once "
                f"per call (under `jit` once per compilation), and may run more than once, so the effect does "
                f"not follow the calls{leak}. Return the value (as an output or in the residuals) or log with "
                f"`jax.debug.callback`"))

    def _side_effect(self, fn: ast.AST, node: ast.AST) -> Optional[Tuple[str, str]]:
        index = self.model.index
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target, value in flatten_targets(targets, getattr(node, "value", None)):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None and self._static(value):
                    continue  # records static metadata (a treedef, shapes, flags) for the enclosing code
                if isinstance(target, ast.Name):
                    scope = index.scope_of(target)
                    if target.id in scope.globals_ or target.id in scope.nonlocals:
                        kind = "global" if target.id in scope.globals_ else "nonlocal"
                        if kind == "nonlocal" and self._owned_by_a_rule(target.id, scope):
                            continue  # a local of an enclosing rule: lives within one call of it
                        return target.id, f"assigns the {kind} `{target.id}` (`{self.quote(node)}`)"
                elif isinstance(target, (ast.Subscript, ast.Attribute)):
                    root = root_name(target)
                    if isinstance(target, ast.Attribute) and self._restored(fn, target, node):
                        continue  # swapped in and put back (`old = self.w; self.w = w; ...; self.w = old`)
                    if root is not None and self._outer_object(fn, root):
                        if isinstance(node, ast.Delete):
                            verb = "deletes from"
                        else:
                            verb = "sets an attribute of" if isinstance(target, ast.Attribute) else "stores into"
                        return root.id, (f"{verb} `{root.id}`, defined outside the rule "
                                         f"(`{self.quote(node)}`)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in CONTAINER_ONLY or method in CONTAINER_TOO:
                root = root_name(node.func.value)
                if root is None or has_at_update(node.func.value):
                    return None
                outer = self._outer_object(fn, root)
                if outer is None:
                    return None
                if method in CONTAINER_TOO and not (root is node.func.value and self._is_container(outer)):
                    return None
                values = [*node.args, *(k.value for k in node.keywords)]
                if values and all(self._static(v) for v in values):
                    return None
                return root.id, f"mutates `{root.id}`, defined outside the rule (`{self.quote(node)}`)"
        return None

    def _restored(self, fn: ast.AST, target: ast.Attribute, node: ast.AST) -> bool:
        """Whether `fn` saved `target`'s value in a local before `node` and assigns it back after."""
        key = ast.dump(target.value) + "." + target.attr
        saved: Set[str] = set()
        for stmt in sorted((n for n in self.model.facts.own_nodes(fn)  # type: ignore[arg-type]
                            if isinstance(n, ast.Assign)), key=lambda n: (n.lineno, n.col_offset)):
            for t, v in flatten_targets(stmt.targets, stmt.value):
                if (isinstance(t, ast.Name) and isinstance(v, ast.Attribute)
                        and ast.dump(v.value) + "." + v.attr == key and stmt.lineno < node.lineno):  # type: ignore[attr-defined]
                    saved.add(t.id)
                elif (isinstance(t, ast.Attribute) and ast.dump(t.value) + "." + t.attr == key
                      and isinstance(v, ast.Name) and v.id in saved and stmt.lineno >= node.lineno):  # type: ignore[attr-defined]
                    return True
        return False

    def _owned_by_a_rule(self, name: str, scope: Scope) -> bool:
        """Whether the `nonlocal name` declared in `scope` is a local of a function that is itself
        a rule (or nested in one): a custom derivative defined and used inside another rule, whose
        rule is called synchronously there. The variable ends with that call, nothing leaks."""
        found = self.model.index.resolve(name, scope)
        return found is not None and self._rule_local(found[0])

    def _rule_local(self, scope: Scope) -> bool:
        """Whether `scope` is the body of a rule or of a function nested in one."""
        if not scope.is_function:
            return False
        owner = scope.node
        return any(owner is rule.node or self.model.index.inside(owner, rule.node)  # type: ignore[arg-type]
                   for d in self.model.derivatives for _, rule in self.model.facts.rules_of(d)
                   if rule.node is not None)

    def _outer_object(self, fn: ast.AST, root: ast.Name) -> Optional[List[Binding]]:
        """The bindings of `root` when they live outside `fn` and are variables (not imports)."""
        found = self.model.index.resolve(root.id, self.model.index.scope_of(root))
        if found is None:
            return None
        scope, bindings = found
        if self.model.index.inside(scope.node, fn) or self._rule_local(scope):
            return None
        if any(b.kind in ("import", "def", "class") for b in bindings):
            return None
        return bindings

    def _static(self, expr: ast.expr, depth: int = 0) -> bool:
        """Whether `expr` is static metadata (never a tracer): constants, types, shapes, treedefs,
        avals, booleans, or `tree_map` of a predicate."""
        if depth > 4:
            return False
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, (ast.Compare, ast.UnaryOp)) and (not isinstance(expr, ast.UnaryOp)
                                                             or isinstance(expr.op, ast.Not)):
            return True
        if isinstance(expr, (ast.Tuple, ast.List, ast.BoolOp)):
            items = expr.values if isinstance(expr, ast.BoolOp) else expr.elts
            return all(self._static(e, depth + 1) for e in items)
        if isinstance(expr, ast.Attribute):
            return expr.attr in STATIC_ATTRIBUTES
        if isinstance(expr, ast.Subscript):
            return isinstance(expr.value, ast.Attribute) and expr.value.attr in STATIC_ATTRIBUTES
        if isinstance(expr, ast.Call):
            q = self.model.index.qualname(expr.func) or ""
            tail = q.rsplit(".", 1)[-1]
            if q in STATIC_CALLS or (q.startswith("jax") and tail in STATIC_JAX_CALLS):
                return True
            if q.startswith("jax") and tail == "tree_map" and expr.args:
                return self._predicate(expr.args[0], depth + 1)
            if q in STATIC_OF_STATIC and len(expr.args) == 1 and not expr.keywords:
                return self._static(expr.args[0], depth + 1)
            return self._keyword_names(expr)
        return False

    def _keyword_names(self, call: ast.Call) -> bool:
        """`kwargs.keys()` of the rule's own `**kwargs`: the keyword names, strings."""
        fn = call.func
        if call.args or call.keywords or not (isinstance(fn, ast.Attribute) and fn.attr == "keys"
                                              and isinstance(fn.value, ast.Name)):
            return False
        scope = self.model.index.scope_of(fn.value)
        while scope is not None and fn.value.id not in scope.bindings:
            scope = scope.parent
        args = getattr(scope.node, "args", None) if scope is not None else None
        return isinstance(args, ast.arguments) and args.kwarg is not None and args.kwarg.arg == fn.value.id \
            and all(b.kind == "param" for b in scope.bindings[fn.value.id])

    def _predicate(self, expr: ast.expr, depth: int) -> bool:
        """A function whose every return value is static (e.g. `not isinstance(x, SymbolicZero)`)."""
        fn: Optional[ast.AST] = expr if isinstance(expr, ast.Lambda) else None
        if isinstance(expr, ast.Name):
            fn = next((b.node for b in self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
                       if b.kind == "def"), None)
        if isinstance(fn, ast.Lambda):
            return self._static(fn.body, depth + 1)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            returns = [r.value for r in self.model.facts.returns_of(fn)]
            return bool(returns) and all(r is not None and self._static(r, depth + 1) for r in returns)
        return False

    def _is_container(self, bindings: List[Binding]) -> bool:
        for b in bindings:
            value = b.value
            if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
                return True
            if isinstance(value, ast.Call) and self.model.index.qualname(value.func) in CONTAINER_MAKERS:
                return True
        return False
