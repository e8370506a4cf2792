from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.rules.tracing._traced_names import (METADATA, Taint, first_traced, residual_of, residual_seeds,
                                                 with_leaves)

class NumpyOnTracedInRule(Rule):
    """## What it does
    Flags a NumPy function (`np.cos`, `np.asarray`, `np.linalg.inv`, ...) or a SciPy one
    (`scipy.special.expit`) applied inside a custom_vjp's fwd or bwd to a value that JAX traces
    there: the cotangent, a residual that fwd computed from the primal's inputs, a differentiable
    input of fwd, or a name computed from one of them; inside a custom_jvp rule (`defjvp`, or a `defjvps`
    rule's arguments), to its primals or tangents; and inside a function of the module the rule passes such a value to (census row E40).
    "Computed from" follows assignments, `+=`, and the variables of a comprehension or `for` loop
    over a traced value or its leaves (`print(max(float(np.abs(np.asarray(c)).max()) for c in
    jax.tree_util.tree_leaves(g)))`, a debugging print); a fwd is read even when its bwd takes `*args`.
    Metadata reads (`np.shape(x)`, `x.shape`, `np.result_type(x)`), residuals that fwd saved as
    Python values (a float, a shape tuple stay Python values in bwd) and NumPy inside a host
    callback (`jax.pure_callback(lambda r: np.cos(r), ...)`, a nested function) are left alone.

    ## Why is this bad?
    NumPy converts its argument to a concrete array. Under `jax.jit`, `jax.vmap` or any staged
    transformation the rule's values are tracers, and the conversion raises
    `TracerArrayConversionError`, far from the rule (jax-ml/jax#1142). Eager `jax.grad` happens to
    pass concrete arrays, so the rule passes its first test and fails later. Measured on JAX 0.10.2
    (`docs/facts/scripts/hazard_numpy_in_rule.py`): `np.cos` of a residual in bwd is right under
    `grad` and raises under `jit(grad)` and `vmap(grad)`; `np.asarray` of a value fwd computed
    from its input raises under `jit(grad)`; `np.log` of a float residual and `np.cos` inside
    `jax.pure_callback` work.

    ## Example
    ```python
    def ext_sin_bwd(x, g):
        return (g * np.cos(x),)
    ```

    ## Use instead
    ```python
    def ext_sin_bwd(x, g):
        return (g * jnp.cos(x),)
    ```
    (or, for code that must run on the host, `jax.pure_callback` with the result's shape).

    ## Fix safety
    No fix: `jnp` has most, not all, of NumPy's functions with the same meaning, and a host
    computation needs a callback with its result's shape and dtype.
    """

    CODE = "VJP332"
    NAME = "numpy-on-traced-in-rule"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    # A `numpy.` name comes from an import of `numpy` itself (`jax.numpy`, `.numpy` are not it).
    # The literal first: the search runs at memchr speed (the lookbehind first was 3.6 ms on a
    # 10,000-line module that spells `jax.numpy` everywhere; this, 0.06 ms).
    NEEDS = re.compile(r"numpy\b(?<![\w.]numpy)|scipy\b(?<![\w.]scipy)")

    INVALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_vjp
def ext_sin(x):
    return jnp.sin(x)

def ext_sin_fwd(x):
    return ext_sin(x), x

def ext_sin_bwd(x, g):
    return (g * np.cos(x),)

ext_sin.defvjp(ext_sin_fwd, ext_sin_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_vjp
def ext_sin(x):
    return jnp.sin(x)

def ext_sin_fwd(x):
    return ext_sin(x), (x, 2.0)

def ext_sin_bwd(res, g):
    x, base = res
    return (g * jnp.cos(x) * np.log(base) / np.log(2.0),)

ext_sin.defvjp(ext_sin_fwd, ext_sin_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()
        self._tangents: Set[str] = set()
        for d in self.model.derivatives:
            for _, rule in self.model.facts.jvp_rules(d) if d.kind == "jvp" else ():
                fn = rule.node
                params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][rule.bound_positional:] \
                    if fn is not None else []
                if fn is None or len(params) < 2:
                    continue
                seeds = {params[-2]: f"the primals `{params[-2]}`", params[-1]: f"the tangents `{params[-1]}`"}
                self._tangents = set(Taint(self.model, fn, {params[-1]: ""}).names)
                self._scan(fn, Taint(self.model, fn, seeds).names,
                           f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}`", jvp=True)
        self._tangents = set()
        for d in self.model.derivatives:  # `defjvps`: each rule takes (tangent, ans, *primals), traced under jit
            for reg in d.registrations if d.kind == "jvp" else ():
                for rule in reg.rules if reg.method == "defjvps" else ():
                    fn = rule.node
                    if fn is not None and not rule.is_none:
                        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
                        seeds = {p: f"the rule's argument `{p}`" for p in params}
                        self._scan(fn, Taint(self.model, fn, seeds).names,
                                   f"{rule_label(rule, 'defjvps rule')} of custom_jvp `{d.name}`")
        for reg in self.model.facts.registered_bwds():
            d, fwd, bwd = reg.d, reg.fwd, reg.bwd
            assert bwd.node is not None
            fwd_traced: Dict[str, str] = {}
            residual: Optional[ast.expr] = None
            if fwd is not None and fwd.node is not None:
                params = fwd.effective_positional() or []
                seeds = {p: f"fwd's differentiable input `{p}`" for i, p in enumerate(params) if i not in d.nondiff}
                fwd_traced = Taint(self.model, fwd.node, seeds).names
                residual = residual_of(self.model, fwd.node)
                self._scan(fwd.node, fwd_traced, f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}`")
            res_param, g = reg.params[len(d.nondiff)], reg.params[-1]
            seeds = {g: f"the cotangent `{g}`"}
            seeds.update(residual_seeds(self.model, bwd.node, res_param, residual, fwd_traced, self.quote))
            taint = Taint(self.model, bwd.node, seeds)
            self._scan(bwd.node, taint.names, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}`")
        for d in self.model.derivatives:  # a fwd whose bwd the registrations above leave out (`def bwd(*args)`)
            for _, fwd, _ in self.model.facts.checked_vjp_rules(d) if d.kind == "vjp" else ():
                if fwd is not None and fwd.node is not None and fwd.node not in self._seen:
                    params = fwd.effective_positional() or []
                    seeds = {p: f"fwd's differentiable input `{p}`" for i, p in enumerate(params) if i not in d.nondiff}
                    self._scan(fwd.node, Taint(self.model, fwd.node, seeds).names,
                               f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}`")

    def _scan(self, fn: FunctionNode, traced: Dict[str, str], where: str, depth: int = 0, jvp: bool = False) -> None:
        if fn in self._seen or not traced:
            return
        self._seen.add(fn)
        traced = with_leaves(self.model, fn, traced)
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            name = self.model.index.qualname(node.func) or ""
            library = _host_library(name)
            if library is None:
                if depth == 0:
                    self._helper(node, traced, where, jvp)
                continue
            found = [(arg, first_traced(self.model, arg, traced)) for arg in [*node.args, *(k.value for k in node.keywords)]]
            found = sorted([(a, s) for a, s in found if s is not None and not self._inner_host_call(a, traced)],
                           key=lambda f: f[1] not in self._tangents)
            for arg, source in found[:1]:
                held = traced[source] if isinstance(arg, ast.Name) and arg.id == source \
                    else f"`{self.quote(arg, 30)}`, computed from {traced[source]},"
                when = ("the tangents are tracers under `jax.grad`, `jax.jit` and `jax.vmap`, and JAX raises "
                        "TracerArrayConversionError") if jvp and source in self._tangents else (
                        "under `jax.jit` or `jax.vmap` it is a tracer and JAX raises TracerArrayConversionError "
                        "(eager `jax.grad` happens to work)")
                instead = f"`jnp.{name[6:]}`" if library == "NumPy" else f"`jax.{name}` where JAX has it"
                self.report(node, f"`{self.quote(node, 40)}` in {where} passes {held} to {library}, "
                                  f"which converts it to a concrete array: {when}; use {instead} or a "
                                  f"`jax.pure_callback` for host code")
                break

    def _inner_host_call(self, arg: ast.expr, traced: Dict[str, str]) -> bool:
        """`arg` holds a NumPy/SciPy call on a traced value (`np.abs(np.asarray(c))`): that call is the one reported."""
        return any(isinstance(sub, ast.Call) and _host_library(self.model.index.qualname(sub.func) or "") is not None
                   and any(first_traced(self.model, a, traced) is not None for a in sub.args) for sub in ast.walk(arg))

    def _helper(self, call: ast.Call, traced: Dict[str, str], where: str, jvp: bool) -> None:
        """A function of the module the rule passes a traced value to: its parameter is traced."""
        helper = named_function(self.model.index, call.func)
        if helper is None or getattr(helper, "decorator_list", None) or self.model.derivative_for_node(helper):
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
            source = first_traced(self.model, keyword.value, traced) if keyword.arg in params else None
            if source is not None:
                seeds[keyword.arg] = f"`{keyword.arg}`, given {traced[source]} (line {call.lineno})"  # type: ignore
        if seeds:
            label = getattr(helper, "name", None) or self.quote(call.func, 20)
            self._scan(helper, Taint(self.model, helper, seeds).names, f"`{label}`, called by {where},", 1, jvp)


def _host_library(name: str) -> Optional[str]:
    """'NumPy' or 'SciPy' for a function of theirs that converts its arguments (`np.cos`,
    `np.linalg.inv`, `scipy.special.expit`), None for metadata readers and anything else."""
    parts = name.split(".")
    if parts[0] == "numpy" and (len(parts) == 2 or len(parts) == 3 and parts[1] in ("linalg", "fft")):
        return None if parts[-1] in METADATA else "NumPy"
    if parts[0] == "scipy" and len(parts) >= 3:
        return "SciPy"
    return None
