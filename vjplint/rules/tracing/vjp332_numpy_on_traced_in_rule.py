from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import FileModel
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode

# NumPy functions that read only a value's metadata, or never convert their argument: safe on a
# tracer (np.shape(t) reads t.shape).
METADATA = frozenset({
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "isscalar", "issubdtype",
    "broadcast_shapes", "promote_types", "can_cast", "finfo", "iinfo", "dtype", "zeros", "ones",
    "empty", "full", "arange", "linspace", "eye", "identity",
})
# Reading these attributes of a tracer gives static Python values.
STATIC_ATTRS = frozenset({"shape", "dtype", "ndim", "size", "aval", "weak_type", "sharding"})
STATIC_CALLS = frozenset({"builtins.len", "builtins.type", "builtins.isinstance", "builtins.id",
                          "builtins.callable", "builtins.hasattr"})


class NumpyOnTracedInRule(Rule):
    """## What it does
    Flags a NumPy function (`np.cos`, `np.asarray`, `np.sum`, ...) applied inside a custom_vjp's
    fwd or bwd to a value that JAX traces there: the cotangent, a residual that fwd computed from
    the primal's inputs, a differentiable input of fwd, or a name computed from one of them.
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
    TRIGGERS = (b"custom_vjp",)
    # A `numpy.` name comes from an import of `numpy` itself (`jax.numpy`, `.numpy` are not it).
    # The literal first: the search runs at memchr speed (the lookbehind first was 3.6 ms on a
    # 10,000-line module that spells `jax.numpy` everywhere; this, 0.06 ms).
    NEEDS = re.compile(r"numpy\b(?<![\w.]numpy)")

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
        for reg in self.model.facts.registered_bwds():
            d, fwd, bwd = reg.d, reg.fwd, reg.bwd
            assert bwd.node is not None
            fwd_traced: Dict[str, str] = {}
            residual: Optional[ast.expr] = None
            if fwd is not None and fwd.node is not None:
                params = fwd.effective_positional() or []
                seeds = {p: f"fwd's differentiable input `{p}`" for i, p in enumerate(params) if i not in d.nondiff}
                fwd_traced = _Taint(self.model, fwd.node, seeds).names
                residual = _residual(self.model, fwd.node)
                self._scan(fwd.node, fwd_traced, f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}`")
            res_param, g = reg.params[len(d.nondiff)], reg.params[-1]
            seeds = {g: f"the cotangent `{g}`"}
            seeds.update(self._residual_seeds(bwd.node, res_param, residual, fwd_traced))
            taint = _Taint(self.model, bwd.node, seeds)
            self._scan(bwd.node, taint.names, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}`")

    def _residual_seeds(self, bwd: FunctionNode, res: str, residual: Optional[ast.expr],
                        fwd_traced: Dict[str, str]) -> Dict[str, str]:
        """The bwd names that hold residuals fwd computed from traced values."""
        if residual is None:
            return {}
        why = "a residual that fwd computed from its inputs"
        if not isinstance(residual, ast.Tuple):
            return {res: f"{why} (`{res}`)"} if _traced(self.model, residual, fwd_traced) else {}
        seeds: Dict[str, str] = {}
        for node in self.model.facts.own_nodes(bwd):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name) \
                    and node.value.id == res and isinstance(node.targets[0], (ast.Tuple, ast.List)) \
                    and len(node.targets[0].elts) == len(residual.elts):
                for target, saved in zip(node.targets[0].elts, residual.elts):
                    if isinstance(target, ast.Name) and _traced(self.model, saved, fwd_traced):
                        seeds[target.id] = f"{why} (`{target.id}`, saved as `{self.quote(saved, 30)}`)"
        return seeds

    def _scan(self, fn: FunctionNode, traced: Dict[str, str], where: str) -> None:
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            name = self.model.index.qualname(node.func) or ""
            if not name.startswith("numpy.") or name.count(".") != 1 or name[6:] in METADATA:
                continue
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                source = _first_traced(self.model, arg, traced)
                if source is None:
                    continue
                held = traced[source] if isinstance(arg, ast.Name) and arg.id == source \
                    else f"`{self.quote(arg, 30)}`, computed from {traced[source]},"
                self.report(node, f"`{self.quote(node, 40)}` in {where} passes {held} to NumPy, "
                                  f"which converts it to a concrete array: under `jax.jit` or `jax.vmap` it is a "
                                  f"tracer and JAX raises TracerArrayConversionError (eager `jax.grad` happens "
                                  f"to work); use `jnp.{name[6:]}` or a `jax.pure_callback` for host code")
                break


def _residual(model: FileModel, fwd: FunctionNode) -> Optional[ast.expr]:
    """The residual fwd returns, when every return gives the same literal pair's second half."""
    found: List[ast.expr] = []
    for ret in model.facts.returns_of(fwd):
        if not isinstance(ret.value, ast.Tuple) or len(ret.value.elts) != 2:
            return None
        found.append(ret.value.elts[1])
    return found[0] if len(found) == 1 else None


class _Taint:
    """Names of a rule bound, straight-line, to values computed from the seeds (kept with the
    seed's description), following single-name and tuple assignments."""

    def __init__(self, model: FileModel, fn: FunctionNode, seeds: Dict[str, str]) -> None:
        self.names = dict(seeds)
        assigns: List[Tuple[ast.expr, ast.expr]] = []
        rebound: Set[str] = set()
        for node in model.facts.own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                assigns.append((node.targets[0], node.value))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) and isinstance(node.target, ast.Name):
                rebound.add(node.target.id)
        for _ in range(4):
            before = len(self.names)
            for target, value in assigns:
                source = _first_traced(model, value, self.names)
                if source is None:
                    continue
                for t in _target_names(target):
                    if t not in self.names and t not in rebound:
                        self.names[t] = f"`{t}` (computed from {self.names[source]})"
            if len(self.names) == before:
                break


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)


def _traced(model: FileModel, e: ast.expr, traced: Dict[str, str]) -> bool:
    return _first_traced(model, e, traced) is not None


def _first_traced(model: FileModel, e: ast.AST, traced: Dict[str, str]) -> Optional[str]:
    """The first traced name `e` reads as data (not through `.shape`, `len(...)` or a nested
    function), or None."""
    if isinstance(e, ast.Name):
        return e.id if e.id in traced else None
    if isinstance(e, ast.Attribute) and e.attr in STATIC_ATTRS:
        return None
    if isinstance(e, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Constant)):
        return None
    if isinstance(e, ast.Call):
        name = model.index.qualname(e.func) or ""
        if name in STATIC_CALLS or (name.startswith("numpy.") and name[6:] in METADATA):
            return None
    for child in ast.iter_child_nodes(e):
        found = _first_traced(model, child, traced)
        if found is not None:
            return found
    return None
