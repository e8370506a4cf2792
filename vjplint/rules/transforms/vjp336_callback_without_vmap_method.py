from __future__ import annotations

import ast
import re
from typing import Iterator, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.model.semantic import FunctionNode
from vjplint.rules.base import Rule

PURE_CALLBACKS = frozenset({"jax.pure_callback", "jax.experimental.pure_callback"})
IO_CALLBACKS = frozenset({"jax.experimental.io_callback", "jax.io_callback"})


class CallbackWithoutVmapMethod(Rule):
    """## What it does
    Flags a `jax.pure_callback` without `vmap_method=` inside a custom derivative: in the
    decorated function or in one of its rules (fwd, bwd, the jvp rule), directly or in a
    module-level function one of them calls. A callback given `vmap_method=` (any value), or
    given its arguments through `**kwargs` that may hold it, is left alone. Also an
    `io_callback(..., ordered=True)` in the decorated function, fwd or the jvp rule, which
    `jax.vmap` refuses (census row E34, `ValueError: Cannot vmap ordered IO callback`: `vmap(f)`
    for the primal, `vmap(grad(f))` for fwd, `vmap` of `jax.jvp` for the jvp rule); an unordered one
    is batched, and so is one in bwd (measured on JAX 0.10.2).

    ## Why is this bad?
    Wrapping a host callback in `jax.custom_jvp` or `jax.custom_vjp` is how JAX's documentation
    makes a callback differentiable, and such functions are then used under `jax.vmap` (a batch
    of inputs, `vmap(grad(f))`, per-example gradients). Since JAX 0.10 a `pure_callback` without
    `vmap_method` raises under `vmap`; older releases looped over the batch with a deprecation
    warning. Measured on JAX 0.10.2 (`docs/facts/scripts/errors/e35_pure_callback_in_jvp_vmap.py`,
    census row E35 of `docs/facts/jax-errors.md`): `jax.vmap(jax.grad(f))` raises
    `NotImplementedError: vmap is only supported for the pure_callback primitive when vmap_method
    is one of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or
    'legacy_vectorized'. Got vmap_method=None.` Eager, `jit` and `grad` work, so tests without
    `vmap` pass.

    ## Example
    ```python
    @jax.custom_jvp
    def host_sin(x):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    ```

    ## Use instead
    ```python
    @jax.custom_jvp
    def host_sin(x):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                 vmap_method="sequential")   # or "expand_dims" for a NumPy ufunc
    ```

    ## Fix safety
    No fix: `"sequential"` (one call per batch element, what older JAX did) is always correct,
    but a callback that handles a batch itself wants `"expand_dims"` or `"broadcast_all"`, which
    only its author can tell.
    """

    CODE = "VJP336"
    NAME = "callback-without-vmap-method"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    NEEDS = re.compile(r"pure_callback|io_callback")  # and a callback: most files with a custom derivative have none
    INVALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_jvp
def host_sin(x):
    return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return host_sin(x), jnp.cos(x) * t
''']
    VALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_jvp
def host_sin(x):
    return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")

@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return host_sin(x), jnp.cos(x) * t
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        places: List[Tuple[str, Optional[FunctionNode]]] = [("the decorated function", d.primal)]
        places += [(role, rule.node) for role, rule in self.model.facts.rules_of(d)]
        kind = d.kind if d.kind in ("vjp", "jvp") else "vjp"
        for role, fn in places:
            if fn is None:
                continue
            for call, helper in self._callbacks(fn):
                if call in self._done:
                    continue
                self._done.add(call)
                where = f" (in `{helper}`, which it calls)" if helper else ""
                if self.model.index.qualname(call.func) in IO_CALLBACKS:
                    if role == "bwd":  # measured: vmap(grad) batches bwd's ordered callback without complaint
                        continue
                    self.report(call, (
                        f"`io_callback(..., ordered=True)` in {_role(role)} of custom_{kind} `{d.name}`{where}: "
                        "under `jax.vmap` (a batch of inputs, `vmap(grad(...))`) JAX raises `ValueError: Cannot "
                        "vmap ordered IO callback`, while eager, `jit` and `grad` work; drop `ordered=True` (an "
                        "unordered io_callback is batched one element at a time) unless the order of the host "
                        "effects matters, and then keep the function out of `vmap`"))
                    continue
                self.report(call, (
                    f"`jax.pure_callback` without `vmap_method=` in {_role(role)} of custom_{kind} "
                    f"`{d.name}`{where}: under `jax.vmap` (a batch of inputs, `vmap(grad(...))`) JAX 0.10 "
                    "raises NotImplementedError for a callback without a vmap_method, while eager, `jit` "
                    "and `grad` work; pass `vmap_method=\"sequential\"` (one call per element, what older "
                    "JAX did) or `\"expand_dims\"`/`\"broadcast_all\"` when the callback handles a batch"))

    def _callbacks(self, fn: FunctionNode) -> Iterator[Tuple[ast.Call, str]]:
        """The pure_callback calls without vmap_method in `fn`, and in module-level functions it
        calls by name (one level), with the helper's name ('' in `fn` itself)."""
        for node in self.model.facts.own_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            if self._unbatched_callback(node):
                yield node, ""
            elif isinstance(node.func, ast.Name):
                helper = self._module_function(node.func.id)
                if helper is not None and helper is not fn:
                    for inner in self.model.facts.own_nodes(helper):
                        if isinstance(inner, ast.Call) and self._unbatched_callback(inner):
                            yield inner, helper.name

    def _unbatched_callback(self, call: ast.Call) -> bool:
        name = self.model.index.qualname(call.func)
        if name in IO_CALLBACKS:
            flag = next((k.value for k in call.keywords if k.arg == "ordered"), None)
            return isinstance(flag, ast.Constant) and flag.value is True
        if name not in PURE_CALLBACKS:
            return False
        return not any(k.arg == "vmap_method" or k.arg is None for k in call.keywords)

    def _module_function(self, name: str) -> Optional[ast.FunctionDef]:
        found = None
        for node in self.model.module.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                found = node  # the last definition, as the module runs
        return found


def _role(role: str) -> str:
    return role if role.startswith("the ") else f"the {role} rule"
