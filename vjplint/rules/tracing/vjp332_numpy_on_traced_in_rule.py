from __future__ import annotations

import ast
import re
from typing import Dict, Optional

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode
from vjplint.rules.tracing._traced_names import METADATA, Taint, first_traced, residual_of, residual_seeds

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
                fwd_traced = Taint(self.model, fwd.node, seeds).names
                residual = residual_of(self.model, fwd.node)
                self._scan(fwd.node, fwd_traced, f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}`")
            res_param, g = reg.params[len(d.nondiff)], reg.params[-1]
            seeds = {g: f"the cotangent `{g}`"}
            seeds.update(residual_seeds(self.model, bwd.node, res_param, residual, fwd_traced, self.quote))
            taint = Taint(self.model, bwd.node, seeds)
            self._scan(bwd.node, taint.names, f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}`")

    def _scan(self, fn: FunctionNode, traced: Dict[str, str], where: str) -> None:
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            name = self.model.index.qualname(node.func) or ""
            if not name.startswith("numpy.") or name.count(".") != 1 or name[6:] in METADATA:
                continue
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                source = first_traced(self.model, arg, traced)
                if source is None:
                    continue
                held = traced[source] if isinstance(arg, ast.Name) and arg.id == source \
                    else f"`{self.quote(arg, 30)}`, computed from {traced[source]},"
                self.report(node, f"`{self.quote(node, 40)}` in {where} passes {held} to NumPy, "
                                  f"which converts it to a concrete array: under `jax.jit` or `jax.vmap` it is a "
                                  f"tracer and JAX raises TracerArrayConversionError (eager `jax.grad` happens "
                                  f"to work); use `jnp.{name[6:]}` or a `jax.pure_callback` for host code")
                break


