from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.diagnostics import Applicability, Severity
from vjplint.rules.base import Rule
from vjplint.rules.migration._tracer_tests import NAME, is_name_literal, type_argument, class_name_of, described_object, handles_grad, is_jvptracer
from vjplint.syntax.walk import walk

# Forward mode: the function it differentiates sees JVPTracers (jax_facts §13).
FORWARD_MODE = frozenset({"jax.jvp", "jax.jacfwd", "jax._src.api.jvp", "jax._src.api.jacfwd"})


class JvpTracerSniffing(Rule):
    """## What it does
    Flags code that detects "being differentiated" by testing for `JVPTracer`:
    `isinstance(x, JVPTracer)` (any import path, also inside a tuple of types),
    `type(x) is JVPTracer`, `type(x).__name__ == "JVPTracer"`, `"JVPTracer" in repr(x)` or
    `str(x)`, `repr(x).startswith("JVPTracer")`. Names assigned once are followed: an aliased
    import (`JVPTracer as _T`), `name = type(x).__name__`, a module constant of class names
    (`NAMES = ("JVPTracer",)`, `frozenset(...)`) or of types; the message quotes each step.

    ## Why is this bad?
    Under `jax.grad` (and `value_and_grad`, `vjp`, `jacrev`, `jit(grad)`) JAX 0.10.2 traces with
    `LinearizeTracer`, whose repr is `GradTracer(primal=..., ...)`; a `JVPTracer` appears only
    under `jax.jvp` and `jacfwd`. Every one of these tests is silently False under `grad`, so the
    branch meant for differentiation never runs and the result is wrong without any error.

    ## Example
    ```python
    from jax.interpreters.ad import JVPTracer

    def scale(x):
        if isinstance(x, JVPTracer):   # False under jax.grad
            return straight_through(x)
        return jnp.round(x)
    ```

    ## Use instead
    ```python
    def scale(x):
        if isinstance(x, jax.core.Tracer):
            return straight_through(x)
        return jnp.round(x)
    ```
    (Better still, express the derivative with `jax.custom_jvp`/`custom_vjp` than by
    inspecting tracers.)

    ## Fix safety
    The rewrite to `isinstance(x, jax.core.Tracer)` is unsafe: it is also True under `jit` and
    `vmap`, which is usually what such code wants but changes behaviour there. It is offered only
    when `jax` is imported as `jax` in the module. On JAX (`fixtures/fix_small/`), a
    straight-through rounding written this way has a zero gradient under grad, jit(grad) and
    vmap(grad); the rewrite gives the intended gradient there and the same values under jit and
    vmap. Code that also tests `LinearizeTracer`, tests
    for `JVPTracer` only where `isinstance(x, jax.core.Tracer)` already holds (inside that `if`
    branch or after it in an `and`: it tells forward mode apart from grad, which takes the other
    branch), compares tracers' traces (`x._trace`, forward-mode machinery), or is part of JAX
    itself (imports only `jax._src`) is not flagged; nor is a test inside a function whose every
    use in the module is as the function `jax.jvp` or `jax.jacfwd` differentiates (its inputs are
    JVPTracers there, even under an outer `grad`). A rewrite is offered only when the test names
    the class or the string itself, not through a shared constant.
    """

    CODE = "VJP402"
    NAME = "jvptracer-sniffing"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"JVPTracer",)
    FIX = "isinstance(x, jax.core.Tracer)"
    INVALID = ['''
import jax
from jax.interpreters.ad import JVPTracer

def is_differentiated(x):
    return isinstance(x, JVPTracer)
''']
    VALID = ['''
import jax

def is_traced(x):
    return isinstance(x, jax.core.Tracer)
''']

    def visit_Call(self, node: ast.Call) -> None:
        self._through: List[Tuple[str, ast.expr, int]] = []
        func = self.model.index.qualname(node.func)
        if func in ("builtins.isinstance", "builtins.issubclass") and len(node.args) == 2:
            subject, types = node.args[0], self._value(node.args[1])
            if func == "builtins.issubclass":
                subject = type_argument(self.model.index, subject)
                if subject is None:
                    return
            elements = types.elts if isinstance(types, ast.Tuple) else [types]
            if not any(is_jvptracer(self.model, e) for e in elements):
                return
            if any(handles_grad(self.model, e) for e in elements):
                return
            if self._through:  # the types come from a name: a rewrite would change its other uses
                self._flag(node, subject, f"`{self.quote(node)}`", None, "isinstance({}, jax.core.Tracer)")
            elif isinstance(types, ast.Tuple):
                element = next(e for e in elements if is_jvptracer(self.model, e))
                self._flag(node, subject, f"`{self.quote(node)}`", element, "jax.core.Tracer")
            else:
                self._flag(node, subject, f"`{self.quote(node)}`", node, "isinstance({}, jax.core.Tracer)")
        elif (isinstance(node.func, ast.Attribute) and node.func.attr == "startswith" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and NAME.startswith(node.args[0].value) and len(node.args[0].value) >= 3):
            subject = described_object(self.model, node.func.value)
            if subject is not None:
                self._flag(node, subject, f"`{self.quote(node)}`", node, "isinstance({}, jax.core.Tracer)")

    def visit_Compare(self, node: ast.Compare) -> None:
        self._through = []
        if len(node.ops) != 1:
            return
        op = node.ops[0]
        left, right = self._value(node.left), self._value(node.comparators[0])
        negated = isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn))
        template = "not isinstance({}, jax.core.Tracer)" if negated else "isinstance({}, jax.core.Tracer)"
        if isinstance(op, (ast.Eq, ast.NotEq)) and (is_name_literal(left) or is_name_literal(right)):
            subject = class_name_of(self.model, right if is_name_literal(left) else left)
            if subject is not None:  # type(x).__name__ == "JVPTracer"
                self._flag(node, subject, f"`{self.quote(node)}`", node, template)
            return
        if isinstance(op, (ast.In, ast.NotIn)):
            if is_name_literal(left):  # "JVPTracer" in repr(x) / type(x).__name__
                subject = described_object(self.model, right)
                if subject is not None:
                    self._flag(node, subject, f"`{self.quote(node)}`", node, template)
            elif isinstance(right, (ast.Tuple, ast.List, ast.Set)) and any(
                    is_name_literal(self._value(e)) for e in right.elts):
                subject = class_name_of(self.model, left)
                if subject is not None:
                    self._flag(node, subject, f"`{self.quote(node)}`", None, template)
            return
        if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
            for side, other in ((left, right), (right, left)):
                if is_jvptracer(self.model, side):
                    subject = type_argument(self.model.index, other)
                    if subject is not None:
                        self._flag(node, subject, f"`{self.quote(node)}`", node, template)
                    return

    # -- recognising the pieces ------------------------------------------------------------------
    def _value(self, expr: ast.expr) -> ast.expr:
        """What a name assigned exactly once holds (`name = type(x).__name__`, a module constant
        `NAMES = ("JVPTracer",)`; `frozenset(...)`/`set(...)`/`tuple(...)` of a literal), else `expr`."""
        seen = 0
        while isinstance(expr, ast.Name) and seen < 3:
            seen += 1
            index = self.model.index
            found = index.resolve(expr.id, index.scope_of(expr))
            if found is None:
                return expr
            owner, bindings = found
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None or \
                    expr.id in owner.globals_ or expr.id in owner.nonlocals:
                return expr
            value = bindings[0].value
            self._through.append((expr.id, value, getattr(bindings[0].node, "lineno", 0)))
            expr = value
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords and \
                self.model.index.qualname(expr.func) in ("builtins.frozenset", "builtins.set", "builtins.tuple"):
            inner = self._value(expr.args[0])
            if isinstance(inner, (ast.Tuple, ast.List, ast.Set)):
                return inner
        return expr


    # -- exemptions and the report ---------------------------------------------------------------
    def _exempt(self, node: ast.AST, subject: ast.expr) -> bool:
        if self.model.facts.is_jax_internal():
            return True
        if self._forward_mode_only(node):
            return True
        by_name = not isinstance(node, ast.Call) or self.model.index.qualname(node.func) not in (
            "builtins.isinstance", "builtins.issubclass")
        # A test by name means this module's own class when the module defines one.
        if by_name and any(b.kind == "class" for b in self.model.index.module_scope.bindings.get(NAME, [])):
            return True
        if self._inside_tracer_test(node, subject):
            return True  # already known to be a tracer: the class name only tells forward mode apart
        fn = self.model.index.enclosing_function(node)
        scope_root: ast.AST = fn if fn is not None else self.model.module
        name = subject.id if isinstance(subject, ast.Name) else None
        for inner in walk(scope_root):
            if isinstance(inner, ast.Attribute) and inner.attr in ("LinearizeTracer",):
                return True  # the same code also handles grad's tracer
            if (name is not None and isinstance(inner, ast.Attribute) and inner.attr == "_trace"
                    and isinstance(inner.value, ast.Name) and inner.value.id == name):
                return True  # compares traces: forward-mode machinery, not a differentiation test
            if isinstance(inner, ast.Name) and inner.id == "LinearizeTracer":
                return True
        return False

    def _forward_mode_only(self, node: ast.AST) -> bool:
        """The test is in a function whose every use in the module is as the function that
        `jax.jvp`/`jax.jacfwd` differentiate: its inputs are JVPTracers there, even under an outer
        `grad`, so the test keeps its meaning."""
        index = self.model.index
        fn = index.enclosing_function(node)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.decorator_list:
            return False
        uses = 0
        for ref in index.of_type(ast.Name):
            if ref.id != fn.name or not isinstance(ref.ctx, ast.Load):  # type: ignore[attr-defined]
                continue
            if not any(b.node is fn for b in index.lookup(ref.id, index.scope_of(ref))):  # type: ignore[attr-defined]
                continue
            parent = index.parent(ref)
            if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is ref
                    and index.qualname(parent.func) in FORWARD_MODE):
                return False
            uses += 1
        return uses > 0

    def _inside_tracer_test(self, node: ast.AST, subject: ast.expr) -> bool:
        """Whether `node` runs only where `isinstance(subject, <jax Tracer>)` holds: inside the body
        of an `if`/conditional expression testing it, or after it in an `and`."""
        index = self.model.index
        child: ast.AST = node
        for parent in index.ancestors(node):
            tests: list = []
            if isinstance(parent, (ast.If, ast.While, ast.IfExp)) and child is not parent.test and (
                    child in (parent.body if isinstance(parent.body, list) else [parent.body])):
                tests = [parent.test]
            elif isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.And) and child in parent.values:
                tests = parent.values[:parent.values.index(child)]  # type: ignore[arg-type]
            elif isinstance(parent, ast.comprehension) and child in parent.ifs:
                tests = parent.ifs[:parent.ifs.index(child)]  # type: ignore[arg-type]
            for test in tests:
                for part in (test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
                             else [test]):
                    if self._tests_tracer(part, subject):
                        return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False
            child = parent
        return False

    def _tests_tracer(self, test: ast.expr, subject: ast.expr) -> bool:
        """`isinstance(subject, jax.core.Tracer)` (any jax path to a class named Tracer)."""
        if not (isinstance(test, ast.Call) and len(test.args) == 2
                and self.model.index.qualname(test.func) == "builtins.isinstance"):
            return False
        if ast.dump(test.args[0]) != ast.dump(subject):
            return False
        types = test.args[1]
        elements = types.elts if isinstance(types, ast.Tuple) else [types]
        return any((self.model.index.qualname(e) or "").startswith("jax")
                   and (self.model.index.qualname(e) or "").endswith(".Tracer") for e in elements)

    def _flag(self, node: ast.AST, subject: ast.expr, shown: str, target: Optional[ast.AST], template: str) -> None:
        if self._exempt(node, subject):
            return
        what = self.quote(subject, 30)
        outcome = "True" if template.startswith("not ") else "False"
        shown += self._evidence(node)
        message = (f"{shown} is silently {outcome} under `jax.grad`: JAX 0.10.2 differentiates (`grad`, `vjp`, "
                   f"`value_and_grad`, `jacrev`) with LinearizeTracer, whose repr is `GradTracer(...)`; only "
                   f"`jax.jvp`/`jacfwd` give a JVPTracer. Test `isinstance({what}, jax.core.Tracer)` instead")
        fix = self._fix(node, subject, target, template)
        if fix is None:
            self.report(node, message)
            return
        target_node, text = fix
        self.report(node, message, fix=self.replacing(target_node, text, Applicability.UNSAFE,
                                                      f"Test `isinstance({what}, jax.core.Tracer)` instead"))

    def _evidence(self, node: ast.AST) -> str:
        """Where the names the test reads come from: `_T` is JVPTracer, `name` = `type(x).__name__`."""
        parts = [f"`{name}` = `{self.quote(value, 40)}` at line {line}" for name, value, line in self._through]
        if isinstance(node, ast.Call) and len(node.args) == 2:
            for e in (node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]):
                if isinstance(e, ast.Name) and e.id != NAME and is_jvptracer(self.model, e):
                    parts.append(f"`{e.id}` is `{self.model.index.qualname(e)}`")
        return f" ({'; '.join(parts)})" if parts else ""

    def _fix(self, node: ast.AST, subject: ast.expr, target: Optional[ast.AST],
             template: str) -> Optional[Tuple[ast.AST, str]]:
        if target is None:
            return None
        if not any(b.kind == "import" and b.qualname == "jax"
                   for b in self.model.index.lookup("jax", self.model.index.scope_of(node))):
            return None
        if target is not node:  # one element of a tuple of types
            return target, template
        return node, template.format(self._source(subject))

    def _source(self, expr: ast.expr) -> str:
        text = self.quote(expr, 10_000)
        return text if expr.lineno == expr.end_lineno else ast.unparse(expr)


