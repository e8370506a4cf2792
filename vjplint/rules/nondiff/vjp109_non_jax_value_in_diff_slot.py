from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, Signature
from vjplint.rules.base import Rule
from vjplint.rules.nondiff._callables_passed import container_leaves
from vjplint.rules.nondiff._opaque_objects import plain_class, plain_object, registered_by_call

# Transformations that call `f` with the arguments they receive, in the same positions.
SAME_POSITIONS = frozenset({"jax.grad", "jax.value_and_grad", "jax.jit", "jax.vmap", "jax.jacfwd", "jax.jacrev",
                            "jax.jacobian", "jax.hessian", "jax.checkpoint", "jax.remat"})


class NonJaxValueInDiffSlot(Rule):
    """## What it does
    Flags a call of a `jax.custom_vjp` / `jax.custom_jvp` function that passes a string, or a
    container literal (tuple, list, dict) holding a string, in a position outside
    `nondiff_argnums`, directly or through a name assigned once from such a literal, or a
    parameter the value inference shows to hold a string (`def log1p(x, *, method="series"):
    return _point(x, method)`); or an object of a class of the module that is no pytree (no
    decorator, plain bases, never given to `jax.tree_util` by a statement): built in place
    (`f(x, Config())`) or `self` passed from a method of that class (`dynamics(self, q)`).

    ## Why is this bad?
    custom_vjp and custom_jvp hand every leaf of every argument outside `nondiff_argnums` to JAX
    as data, and a string is not a JAX type. Measured on JAX 0.10.2
    (`docs/facts/scripts/hazard_families.py`, section E): the call raises at once, eager
    included: custom_vjp `TypeError: Argument 'relu' of type <class 'str'> is not a valid JAX
    type`, custom_jvp `TypeError: Error interpreting argument to custom_jvp_call as a JAX value`
    (jax-ml/jax#3045, jax-ml/jax#10366). `None`, a tuple holding `None`, a Python bool or a dict
    of floats are valid there (None is an empty pytree; numbers are traced). The same string in
    `nondiff_argnums` works everywhere. (A Python function in such a position is VJP108's.)

    ## Example
    ```python
    @jax.custom_vjp
    def activate(x, kind):
        ...

    activate(x, "tanh")
    ```

    ## Use instead
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def activate(x, kind):
        ...
    ```

    ## Fix safety
    No automatic fix: moving the argument into `nondiff_argnums` changes bwd's signature.
    """

    CODE = "VJP109"
    NAME = "non-jax-value-in-diff-slot"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    INVALID = ['''
import jax

@jax.custom_vjp
def activate(x, kind):
    return x

activate.defvjp(lambda x, kind: (x, None), lambda _, g: (g, None))
y = activate(1.0, "tanh")
''']
    VALID = ['''
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def activate(x, kind):
    return x

activate.defvjp(lambda x, kind: (x, None), lambda kind, _, g: (g,))
y = activate(1.0, "tanh")
''']

    def check(self) -> None:
        # `g(f)(...)` calls, found once per file.
        self._by_name: Dict[str, List[Tuple[CustomDerivative, Signature]]] = {}
        for d in self.model.derivatives:
            if d.api != "jax" or d.primal is None or d.nondiff_unresolved or d.bound_self:
                continue
            sig = self.model.signature(d.primal)
            for site in d.call_sites:
                self._check_call(d, sig, site.call, site.positional_offset)
            self._by_name.setdefault(d.name, []).append((d, sig))

    def visit_Call(self, node: ast.Call) -> None:
        """`jax.grad(f)(...)`, `jax.jit(f)(...)`: the arguments reach `f` in the same positions."""
        inner = node.func
        if not (isinstance(inner, ast.Call) and inner.args and isinstance(inner.args[0], ast.Name)):
            return
        target = inner.args[0]
        candidates = self._by_name.get(target.id)
        if not candidates or inner.keywords or (self.model.index.qualname(inner.func) or "") not in SAME_POSITIONS:
            return
        for d, sig in candidates:
            if self._names_derivative(target, d):
                self._check_call(d, sig, node, 0)

    def _names_derivative(self, name: ast.Name, d: CustomDerivative) -> bool:
        """`name` resolves, in its own scope, to the binding that holds `d` (not another `f`)."""
        bindings = self.model.index.lookup(name.id, self.model.index.scope_of(name))
        return bool(bindings) and all(b.node is d.primal or (b.value is not None and b.value is d.creation)
                                      or (isinstance(b.node, ast.Assign) and b.node.value is d.creation)
                                      for b in bindings)

    def _check_call(self, d: CustomDerivative, sig: Signature, call: ast.Call, offset: int) -> None:
        slots = []
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            slots.append((position + offset, arg))
        slots += [(sig.positional.index(k.arg), k.value) for k in call.keywords
                  if k.arg is not None and k.arg in sig.positional]
        kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
        error = ("TypeError: Argument '...' of type <class 'str'> is not a valid JAX type" if d.kind == "vjp"
                 else "TypeError: Error interpreting argument to custom_jvp_call as a JAX value")
        rule = "bwd" if d.kind == "vjp" else "the jvp rule"
        for index, arg in slots:
            if index in d.nondiff or index >= len(sig.positional):
                continue
            found = self._string_in(arg, 0)
            kind_of = self.model.facts.values().of(arg) if found is None and isinstance(arg, ast.Name) else None
            cls = self._plain_object(arg) if found is None and (kind_of is None or kind_of.tag != "string") else None
            if kind_of is not None and kind_of.tag == "string":  # a parameter defaulting to a string, say
                what = f"`{arg.id}`, a string ({kind_of.why or 'a string at every call'})"  # type: ignore[attr-defined]
            elif cls is not None:
                what = f"`{self.quote(arg, 30)}`, an object of class `{cls}` of this module, which is no pytree,"
            elif found is None:
                continue
            else:
                what = (f"the string {self.quote(found, 30)}" if found is arg
                        else f"`{self.quote(arg, 40)}`, which holds the string {self.quote(found, 30)}")
            self.report(arg, (
                f"{kind} `{d.name}` receives {what} in position {index} (`{sig.positional[index]}`), which is "
                f"not in nondiff_argnums: {kind} passes every leaf of such an argument to JAX as data and "
                f"{'such an object' if cls else 'a string'} is not a JAX type, so this call raises "
                f"{error.replace('str', cls) if cls else error}, eagerly too (jax-ml/jax#3045). Put "
                f"position {index} in nondiff_argnums ({rule} then receives it first), or pass only arrays there"))

    def _plain_object(self, arg: ast.expr) -> Optional[str]:
        """The class when `arg` builds an object of a class of this module that is no pytree, or is `self` in a
        method of such a class (heldout10's `static_to_traced/pyroffi_fd_differentiable`: `f(self, q)`)."""
        fn = self.model.index.enclosing_function(arg)
        cls = self.model.index.parent(fn) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if isinstance(arg, ast.Name) and isinstance(cls, ast.ClassDef) and fn.args.args and \
                fn.args.args[0].arg == arg.id and not fn.decorator_list and self._instantiated(cls) and \
                len(self.model.index.lookup(arg.id, self.model.index.scope_of(arg))) == 1:
            name: Optional[str] = cls.name if plain_class(self.model, cls, 0) else None
        else:
            name = plain_object(self.model, arg)
        return None if name is None or registered_by_call(self.model, name) else name

    def _instantiated(self, cls: ast.ClassDef) -> bool:
        """The class is called somewhere (`ROBOT = Arm()`): its plain functions are methods, their first parameter
        the instance (a namespace class whose functions are read as `Ops.f` is not)."""
        return any(isinstance(c.func, ast.Name) and c.func.id == cls.name and any(
            b.node is cls for b in self.model.index.lookup(c.func.id, self.model.index.scope_of(c)))
            for c in self.model.index.of_type(ast.Call))

    def _string_in(self, expr: ast.expr, depth: int) -> Optional[ast.expr]:
        """The string constant `expr` is or holds (a literal, a container of the call's own making,
        or a name assigned once from one)."""
        if isinstance(expr, ast.JoinedStr) or (isinstance(expr, ast.Constant) and isinstance(expr.value, str)):
            return expr
        if depth > 3:
            return None
        leaves = container_leaves(self.model, expr)  # a tuple, list, dict or NamedTuple built in place
        if leaves != [expr]:
            parts = leaves
        elif isinstance(expr, ast.Name) and depth == 0:
            bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
                return None
            parts = [bindings[0].value]
        else:
            return None
        for part in parts:
            found = self._string_in(part, depth + 1)
            if found is not None:
                return found
        return None
