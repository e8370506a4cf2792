from __future__ import annotations

import ast
from typing import Dict, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.tracing._traced_names import (Taint, array_test, element_source, first_traced, residual_of,
                                                 residual_seeds, with_leaves)

# Python's conversions of a value to a Python number or truth value: on a tracer they raise.
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.complex",
                         "builtins.range", "operator.index"})
# Methods of an array that give Python values.
TO_PYTHON = frozenset({"item", "tolist", "__float__", "__int__", "__bool__", "__index__", "__complex__"})
ERRORS = {"branch": "TracerBoolConversionError", "format": "TypeError (unsupported format string)",
          "index": "TracerIntegerConversionError"}
INDEX = frozenset({"builtins.range", "operator.index"})


class PythonValueOfTracedInRule(Rule):
    """## What it does
    Flags a custom rule that turns a value JAX traces into a Python value: `float(...)`,
    `int(...)`, `bool(...)`, `range(...)`, `math.*`, `.item()`, `.tolist()`, a format spec
    (`f"{x:.3f}"`), or an `if`/`while`/conditional expression that compares one
    (`if jnp.max(x) > 0:`) or applies Python's `all()`/`any()` to arrays computed from its
    elements or leaves (a finiteness guard: `if not all(jnp.all(jnp.isfinite(c)) for c in
    jax.tree_util.tree_leaves(g)):`). The traced values are those VJP332 reads: a custom_vjp fwd's
    differentiable inputs, bwd's cotangent and the residuals fwd computed from its inputs, what
    is computed from them (through `+=` and the variables of a comprehension or `for` loop over
    one's leaves), and the parameters of the module's own helpers the rule passes one of them to;
    a fwd is read even when its bwd takes `*args`. A custom_jvp rule making a Python value (`float`, `math.*`, a format spec) of its primals, or
    of a value computed from them, directly or in a module helper, is flagged too (branches on the
    primals are left alone; a rule converting its tangents is VJP335's). Metadata
    (`x.shape`, `len(x)`, `x.ndim`), nondiff arguments and residuals fwd saved as Python values
    are left alone, as is code inside a nested function (a host callback).

    ## Why is this bad?
    Under `jax.jit` (of a gradient), `jax.vmap` or any staged transformation, fwd and bwd run
    on tracers, and a tracer has no Python value: JAX raises `ConcretizationTypeError`
    (`TracerBoolConversionError` for a branch, `TypeError` for a format spec). Eager `jax.grad`
    passes concrete arrays, so the rule passes its first test and fails later. Measured on JAX
    0.10.2 (`docs/facts/scripts/hazard_python_value_in_rule.py`): `float`, `.item()`, `.tolist()`,
    `if`, `range`, `bool` and a format spec, each in fwd, on bwd's cotangent or on a residual, run
    under `grad` and raise under `jit(grad)`.

    ## Example
    ```python
    def clip_fwd(x):
        scale = float(jnp.max(jnp.abs(x)))
        return clip(x), (x, scale)
    ```

    ## Use instead
    ```python
    def clip_fwd(x):
        scale = jnp.max(jnp.abs(x))          # keep it an array
        return clip(x), (x, scale)
    ```
    (`jnp.where`/`lax.cond` for a branch; `jax.debug.print` to log a value).

    ## Fix safety
    No fix: what the Python value was for (a branch, a loop bound, a log line) needs its own
    array form.
    """

    CODE = "VJP344"
    NAME = "python-value-of-traced-in-rule"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def clip(x):
    return jnp.clip(x, -1.0, 1.0)

def clip_fwd(x):
    return clip(x), (x, float(jnp.max(jnp.abs(x))))

def clip_bwd(res, g):
    x, scale = res
    return (g * (jnp.abs(x) <= 1.0),)

clip.defvjp(clip_fwd, clip_bwd)
''']
    VALID = ['''
from functools import partial

import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def clip(x, limit):
    return jnp.clip(x, -limit, limit)

def clip_fwd(x, limit):
    n = int(x.shape[0])
    return clip(x, limit), (x, n)

def clip_bwd(limit, res, g):
    x, n = res
    return (g * (jnp.abs(x) <= float(limit)),)

clip.defvjp(clip_fwd, clip_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()
        self._when = "under `jax.jit` of a gradient or `jax.vmap` it is a tracer (eager `jax.grad` happens to work)"
        self._plain_memo: Dict[Tuple[ast.AST, bool], bool] = {}
        for reg in self.model.facts.registered_bwds():
            d, fwd, bwd = reg.d, reg.fwd, reg.bwd
            assert bwd.node is not None
            if (fwd is None or fwd.node is None or self._plain(fwd.node)) and self._plain(bwd.node):
                continue  # nothing in the rules can make a Python value: no taint to compute
            if self._eager_only(d):
                continue
            fwd_traced, residual = self._fwd(d, fwd)
            if self._plain(bwd.node):
                continue
            res_param, g = reg.params[len(d.nondiff)], reg.params[-1]
            seeds = {g: f"the cotangent `{g}`"}
            seeds.update(residual_seeds(self.model, bwd.node, res_param, residual, fwd_traced, self.quote))
            taint = Taint(self.model, bwd.node, seeds)
            self._scan(bwd.node, taint.names, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}`", True)
        for d in self.model.derivatives:  # a fwd whose bwd the registrations above leave out (`def bwd(*args)`)
            for _, fwd, _ in self.model.facts.checked_vjp_rules(d) if d.kind == "vjp" else ():
                if fwd is not None and fwd.node is not None and fwd.node not in self._seen and \
                        not self._plain(fwd.node) and not self._eager_only(d):
                    self._fwd(d, fwd)
        self._when = ("under `jax.jit` or `jax.vmap` (`jax.jit(jax.grad(...))`, `jax.vmap(jax.grad(...))`) the primals "
                      "are tracers (eager `jax.jvp`/`jax.grad` of a scalar happens to work)")
        for d in self.model.derivatives:  # a custom_jvp rule on its primals (its tangents are VJP335's)
            for _, rule in self.model.facts.jvp_rules(d) if d.kind == "jvp" else ():
                params = rule.effective_positional() or []
                if rule.node is None or len(params) < 2 or self._plain(rule.node) or self._eager_only(d):
                    continue
                primals = params[-2]
                traced = Taint(self.model, rule.node, {primals: f"the primals `{primals}`"}).names
                self._scan(rule.node, traced, f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}`", False)

    def _fwd(self, d, fwd) -> Tuple[Dict[str, str], Optional[ast.expr]]:
        """Scan fwd (its differentiable inputs traced): the names it traces, and its residual."""
        if fwd is None or fwd.node is None:
            return {}, None
        params = fwd.effective_positional() or []
        seeds = {p: f"fwd's differentiable input `{p}`" for i, p in enumerate(params)
                 if i not in d.nondiff and not self._number_option(d, i, p)}
        fwd_traced = Taint(self.model, fwd.node, seeds).names
        self._scan(fwd.node, fwd_traced, f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}`", True)
        return fwd_traced, residual_of(self.model, fwd.node)

    def _plain(self, fn: FunctionNode, helpers: bool = True) -> bool:
        """No node of `fn` can make a Python value, nor (`helpers`) call a helper: its scan reports nothing."""
        key = (fn, helpers)
        found = self._plain_memo.get(key)
        if found is None:
            found = self._plain_memo[key] = not any(
                isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) or
                isinstance(node, ast.FormattedValue) and node.format_spec is not None or
                isinstance(node, ast.Call) and (self._converts(node) or helpers and self._helper_of(node) is not None)
                for node in self.model.facts.own_nodes(fn))
        return found

    def _converts(self, call: ast.Call) -> bool:
        """`call` has the shape of a conversion, whatever its argument."""
        if isinstance(call.func, ast.Attribute) and call.func.attr in TO_PYTHON and not call.args:
            return True
        q = self.model.index.qualname(call.func) or ""
        return bool(call.args) and (q in CONVERSIONS or q.startswith("math."))

    def _helper_of(self, call: ast.Call) -> Optional[FunctionNode]:
        """The function of the module `call` calls that `_helper` follows."""
        helper = named_function(self.model.index, call.func)
        if helper is None or getattr(helper, "decorator_list", None) or self.model.derivative_for_node(helper) is not None:
            return None
        return helper

    def _number_option(self, d, index: int, name: str) -> bool:
        """A parameter with a Python-number default (`eps=1e-5`) that no call of the module
        passes: an option, a constant under `jit` as long as callers leave it (JAX traces only
        what is passed), so a Python test on it is not shown to meet a tracer."""
        if d.primal is None:
            return False
        sig = self.model.signature(d.primal)
        key = sig.positional[index] if index < len(sig.positional) else name
        default = sig.defaults.get(key)
        if not (isinstance(default, ast.Constant) and isinstance(default.value, (int, float))):
            return False
        return not self.model.facts.calls_pass(d, index).any

    def _eager_only(self, d) -> bool:
        """The primal itself makes Python values of its differentiable inputs (`if x > 0:`): the
        definition is written for eager use, and its rules doing the same is not a new hazard."""
        if d.primal is None or self._plain(d.primal, helpers=False):
            return False
        params = [a.arg for a in (*d.primal.args.posonlyargs, *d.primal.args.args)]
        seeds = {p: p for i, p in enumerate(params) if i not in d.nondiff}
        traced = Taint(self.model, d.primal, seeds).names
        return any(self._conversion(node, traced, True) is not None for node in self.model.facts.own_nodes(d.primal))

    def _scan(self, fn: FunctionNode, traced: Dict[str, str], where: str, branches: bool, depth: int = 0) -> None:
        if fn in self._seen or not traced:
            return
        self._seen.add(fn)
        traced = with_leaves(self.model, fn, traced)
        for node in self.model.facts.own_nodes(fn):
            found = self._conversion(node, traced, branches)
            if found is not None:
                kind, value, source = found
                at = node.test if kind == "branch" else node
                if kind == "format":  # the f-string: a `{...}` has its own position only from Python 3.12
                    at = self.model.index.parent(node) or node
                self._report(at, kind, value, traced, source, where)
            elif depth == 0 and isinstance(node, ast.Call):
                self._helper(node, traced, where, branches)

    def _conversion(self, node: ast.AST, traced: Dict[str, str], branches: bool):
        """(kind, the traced expression, its traced name) when `node` makes a Python value of one."""
        if isinstance(node, ast.Call):
            q = self.model.index.qualname(node.func) or ""
            if q in CONVERSIONS or q.startswith("math."):
                for arg in node.args:
                    source = first_traced(self.model, arg, traced)
                    if source is not None:
                        return "index" if q in INDEX else "convert", arg, source
            elif isinstance(node.func, ast.Attribute) and node.func.attr in TO_PYTHON and not node.args:
                source = first_traced(self.model, node.func.value, traced)
                if source is not None:
                    return "index" if node.func.attr == "__index__" else "convert", node.func.value, source
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            source = first_traced(self.model, node.value, traced)
            if source is not None:
                return "format", node.value, source
        elif branches and isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            test = array_test(self.model, node.test, traced)
            if test is not None:
                return "branch", test, element_source(self.model, test, traced) or first_traced(self.model, test, traced)
        return None

    def _helper(self, call: ast.Call, traced: Dict[str, str], where: str, branches: bool) -> None:
        """A function of the module the rule passes a traced value to: its parameter is traced."""
        helper = self._helper_of(call)
        if helper is None:
            return
        params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        seeds: Dict[str, str] = {}
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred) or position >= len(params):
                break
            source = first_traced(self.model, arg, traced)
            if source is not None:
                seeds[params[position]] = f"`{params[position]}`, given {traced[source]} (line {call.lineno})"
        for keyword in call.keywords:
            if keyword.arg in params:
                source = first_traced(self.model, keyword.value, traced)
                if source is not None:
                    seeds[keyword.arg] = f"`{keyword.arg}`, given {traced[source]} (line {call.lineno})"
        if seeds:
            names = Taint(self.model, helper, seeds).names
            label = getattr(helper, "name", None) or self.quote(call.func, 20)
            self._scan(helper, names, f"`{label}`, called by {where},", branches, 1)

    def _report(self, node: ast.AST, kind: str, value: ast.expr, traced: Dict[str, str], source: Optional[str],
                where: str) -> None:
        held = traced.get(source or "", "a traced value")
        if not (isinstance(value, ast.Name) and value.id == source):
            held = f"`{self.quote(value, 30)}` (computed from {held})"
        what = {"convert": f"turns {held} into a Python value", "index": f"uses {held} as a Python integer", "format": f"formats {held} with a format spec",
                "branch": f"branches in Python on {held}"}[kind]
        error = ERRORS.get(kind, "ConcretizationTypeError")
        self.report(node, f"`{self.quote(node, 40)}` in {where} {what}: {self._when}, and JAX raises {error}. Keep it "
                          f"an array (`jnp.where`/`lax.cond` for a branch, `jax.debug.print` to log it)")
