from __future__ import annotations

import ast
from typing import Dict, Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import constant_value, named_function
from vjplint.syntax.walk import walk

# `custom_vjp.defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False)`: the flag's position
SYMBOLIC_ZEROS_POSITION = 2
ARRAY_FUNCTIONS = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "numpy.")
RECORD_FIELDS = ("value", "perturbed")
ARRAY_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "T", "astype", "reshape", "sum", "mean", "at"})
# calls that do not compute with their argument (a test, a print)
SAFE_CALLS = frozenset({"isinstance", "type", "id", "print", "repr", "str", "callable", "hasattr", "getattr"})


class SymbolicZerosRawPrimal(Rule):
    """## What it does
    Flags a custom_vjp fwd rule registered with `defvjp(..., symbolic_zeros=True)` (a literal or
    a module constant) that computes with a differentiable argument as if it were an array (an
    operand of arithmetic, indexed, an array attribute such as `x.shape`, or an argument of a
    `jnp`/`lax`/`jax.nn`/`jax.scipy`/`np` function, before fwd binds the name again),
    or passes it to a function of the module that does or to the custom function itself, and never
    reads `.value` or `.perturbed` (nor does a closure or helper it names). Passed to a callable
    vjplint cannot read (a factory's argument, another module's function), it is a warning.

    ## Why is this bad?
    With `symbolic_zeros=True`, JAX passes fwd every leaf of every differentiable argument as a
    `jax.custom_derivatives.CustomVJPPrimal` record (`.value` is the array, `.perturbed` says
    whether it is differentiated), not as the array. Arithmetic or a `jnp` call on the record
    fails under differentiation only (plain calls run the primal):

        TypeError: logaddexp requires ndarray or scalar arguments, got <class
        'jax._src.custom_derivatives.CustomVJPPrimal'> at position 0.

    The flag is typically copied from code that uses it, without the `.value` reads.

    ## Example
    ```python
    def f_fwd(x):
        return jnp.sin(x), jnp.cos(x)

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    ```

    ## Use instead
    ```python
    def f_fwd(x):
        return jnp.sin(x.value), jnp.cos(x.value)

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    ```
    (or drop `symbolic_zeros=True` when bwd does not need to know which inputs are zero).

    ## Fix safety
    No automatic fix: whether to read `.value` everywhere or to drop the flag (which also
    changes what bwd receives) is for the author to decide.
    """

    CODE = "VJP324"
    NAME = "symbolic-zeros-raw-primal"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    return (g * cos_x,)

f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x.value), jnp.cos(x.value)

def f_bwd(cos_x, g):
    return (g * cos_x,)

f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
''']

    def check(self) -> None:
        self._seen = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        nondiff = self.model.facts.nondiff_positions(d)
        if nondiff is None:
            return
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or fwd.node in self._seen or reg.method != "defvjp":
                continue
            flag = self._flag(reg.node, reg.keywords)
            if flag is None:
                continue
            self._seen.add(fwd.node)
            keyword = flag in reg.keywords.values()
            shown = (f"`symbolic_zeros={self.quote(flag, 30)}`" if keyword else
                     f"`{self.quote(flag, 30)}` (defvjp's `symbolic_zeros`)")
            self._check_fwd(d, fwd, f"{shown} at line {flag.lineno}", nondiff)

    def _flag(self, call: ast.AST, keywords: Dict[str, ast.expr]) -> Optional[ast.expr]:
        """The `symbolic_zeros` argument of a defvjp call when it is provably true (`keywords`: the registration's,
        a `**OPTS` dict of the module spread into them)."""
        if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords) and "symbolic_zeros" not in keywords:
            return None
        expr = keywords.get("symbolic_zeros")
        if expr is None and len(call.args) > SYMBOLIC_ZEROS_POSITION:
            expr = call.args[SYMBOLIC_ZEROS_POSITION]
        if expr is None:
            return None
        value = expr.value if isinstance(expr, ast.Constant) else constant_value(self.model.index, expr)
        return expr if value is True or (isinstance(value, int) and not isinstance(value, bool) and value) else None

    def _check_fwd(self, d: CustomDerivative, fwd: RuleFunction, flag: str, nondiff) -> None:
        fn = fwd.node
        sig = self.model.signature(fn)  # type: ignore[arg-type]
        own = set(self.model.facts.own_nodes(fn))
        read = {n.value.id if isinstance(n.value, ast.Name) else "" for n in own
                if isinstance(n, ast.Attribute) and n.attr in RECORD_FIELDS}
        if "" in read or self._reads_record(fn, set(), 0, own):
            return  # a closure in fwd or a helper it names reads `.value`/`.perturbed`: it knows the records
        for position, name in enumerate(sig.positional):
            if position in nondiff or name in read:
                continue  # nondiff arguments reach fwd as they are; `x.value` read: fwd knows
            found = self._use(fn, name, 0)
            if found is None:
                continue
            use, via = found
            head = f"{rule_label(fwd, 'fwd')} of `{d.name}`"
            tail = (f"{flag} makes JAX pass fwd each differentiable argument as a `CustomVJPPrimal` record "
                    f"(`{name}.value`, `{name}.perturbed`)")
            if via is None or via[1]:
                how = f"computes with `{name}` as an array (`{self.quote(use, 50)}`)" if via is None else \
                    f"passes `{name}` to `{via[0]}`, {via[3]} (`{self.quote(use, 50)}`)"
                self.report(use if via is None else via[2], f"{head} {how}, but {tail}: differentiating `{d.name}` "
                                                            f"raises a TypeError on the `CustomVJPPrimal` record; "
                                                            f"read `{name}.value`, or drop `symbolic_zeros=True`")
            else:
                self.report(via[2], f"{head} passes `{name}` to `{via[0]}` (`{self.quote(via[2], 50)}`) and never "
                                    f"reads the record's `.value`, but {tail}: if `{via[0]}` computes with it, "
                                    f"differentiating `{d.name}` may raise a TypeError on the `CustomVJPPrimal` "
                                    f"record; pass `{name}.value`, or drop `symbolic_zeros=True`",
                            severity=Severity.WARNING)
            return  # one finding per fwd: the same record reaches every use

    def _reads_record(self, fn, seen: set, depth: int, skip: frozenset = frozenset()) -> bool:
        """`fn` (its nodes in `skip` aside: fwd's own reads count per parameter), a function nested in
        it or a function of this module it names reads a record field (`x.value`, `getattr(x, "perturbed")`)."""
        if fn in seen or depth > 3:
            return False
        seen.add(fn)
        for node in walk(fn):
            if isinstance(node, ast.Attribute) and node.attr in RECORD_FIELDS and node not in skip:
                return True
            if isinstance(node, ast.Constant) and node.value in RECORD_FIELDS:
                return True  # getattr(x, "value"), a field named by a string
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in ("jax", "jnp", "np"):
                callee = named_function(self.model.index, node)
                if callee is not None and callee is not fn and self._reads_record(callee, seen, depth + 1):
                    return True
        return False

    def _use(self, fn, name: str, depth: int):
        """(the first use of parameter `name` of `fn` as array data, None) or (the use, (the callee's
        name, whether it computes with it as an array, the call)) for a parameter passed on; None
        when `fn` only tests, compares by identity or drops it, or binds `name` again."""
        index = self.model.index
        scope = index.scopes.get(fn)
        if depth > 3 or scope is None or not scope.bindings.get(name) or name in scope.globals_ \
                or name in scope.nonlocals:
            return None
        direct = self._array_use(fn, name)
        if direct is not None:
            return direct, None
        if len(scope.bindings[name]) != 1:
            return None  # bound again: what later calls receive is another value
        held = {name} | {b.node.targets[0].id for bs in scope.bindings.values() for b in bs  # `s = (t, x)`
                          if len(bs) == 1 and b.kind == "assign" and isinstance(b.node, ast.Assign)
                          and isinstance(b.node.targets[0], ast.Name) and isinstance(b.value, (ast.Tuple, ast.List))
                          and any(_is(e, name) for e in b.value.elts)}
        passed = []
        for node in walk(fn):
            if not isinstance(node, ast.Call) or isinstance(node.func, ast.Name) and node.func.id in SAFE_CALLS:
                continue
            for position, arg in enumerate(node.args):
                if any(_is(arg, h) for h in held) or isinstance(arg, (ast.Tuple, ast.List)) and any(
                        _is(e, name) for e in arg.elts):
                    passed.append((node, position, arg))
        for call, position, arg in sorted(passed, key=lambda c: (c[0].lineno, c[0].col_offset)):
            q = index.qualname(call.func) or ""
            shown = self.quote(call.func, 30)
            if q.startswith(ARRAY_FUNCTIONS):
                return call, None
            if self.model.facts.derivative_named(call.func) is not None:  # JAX flattens its arguments: no record passes
                return call, (shown, True, call, "which takes only arrays (a custom derivative flattens its arguments)")
            callee = named_function(index, call.func) if isinstance(call.func, ast.Name) else None
            if callee is not None and _is(arg, name) and not isinstance(callee, ast.Lambda):
                params = self.model.signature(callee).positional
                inner = self._use(callee, params[position], depth + 1) if position < len(params) else None
                if inner is not None and (inner[1] is None or inner[1][1]):
                    return inner[0], (shown, True, call, "which computes with it as an array")
            return call, (shown, False, call, "")
        return None

    def _array_use(self, fn, name: str) -> Optional[ast.expr]:
        """The first place `fn` uses the parameter `name` as array data; None when `fn` reads one
        of the record's fields or binds `name` again."""
        index = self.model.index
        scope = index.scopes.get(fn)
        bindings = scope.bindings.get(name, []) if scope is not None else []
        if scope is None or not bindings or bindings[0].kind != "param" or name in scope.globals_ \
                or name in scope.nonlocals:
            return None
        until = min((getattr(b.node, "lineno", 0) for b in bindings[1:]), default=None)  # `x = jnp.asarray(x)`
        nodes = self.model.facts.own_nodes(fn)
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name \
                    and node.attr in RECORD_FIELDS:
                return None
        uses = []
        for node in nodes:
            if isinstance(node, ast.BinOp) and _is(node.left, name) or isinstance(node, ast.BinOp) and _is(
                    node.right, name) or isinstance(node, ast.UnaryOp) and _is(node.operand, name):
                uses.append(node)
            elif isinstance(node, ast.Call) and any(_is(a, name) for a in node.args) and (
                    index.qualname(node.func) or "").startswith(ARRAY_FUNCTIONS):
                uses.append(node)
            elif isinstance(node, ast.Subscript) and _is(node.value, name) or isinstance(node, ast.Attribute) and \
                    _is(node.value, name) and node.attr in ARRAY_ATTRIBUTES:
                uses.append(node)  # a record has no items, shape or dtype
        uses = [n for n in uses if until is None or n.lineno <= until]
        return min(uses, key=lambda n: (n.lineno, n.col_offset)) if uses else None


def _is(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name
