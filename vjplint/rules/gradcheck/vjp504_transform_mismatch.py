"""VJP504: a custom derivative gives other values or gradients under jit or vmap (check-grads)."""

from __future__ import annotations

from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule


class TransformMismatch(Rule):
    """## What it does
    Reported by `vjplint check-grads`, never by linting: it evaluates the custom derivative and
    its gradient eagerly, under `jax.jit` and under `jax.vmap` (a batch of three input sets),
    and reports values or gradients that differ from the eager ones, or a transformation that
    raises where the eager call does not. When the primal function without its custom rule
    fails under the same transformation, the check is skipped: the function is not meant to
    be transformed, and that is not the rule's fault.

    ## Why is this bad?
    `jit` and `vmap` must not change results. A rule that is right eagerly but wrong under a
    transformation usually escapes JAX's abstraction: a host callback declared vectorised
    (`vmap_method="broadcast_all"`) that reduces over the whole array, state kept in Python
    between fwd and bwd, NumPy calls on traced values. Unit tests that call the function
    eagerly pass; the batched training step computes something else.

    ## Example
    ```python
    def _host_vjp(x, g):
        return g * np.sum(x) + np.sum(g * x)  # sums over the batch axis too, under vmap

    def mean_scale_bwd(x, g):
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return (jax.pure_callback(_host_vjp, shape, x, g, vmap_method="broadcast_all"),)
    ```

    ## Use instead
    ```python
    def _host_vjp(x, g):
        return g * np.sum(x, axis=-1, keepdims=True) + np.sum(g * x, axis=-1, keepdims=True)
    ```
    (or `vmap_method="sequential"`, which calls the callback once per batch element).

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP504"
    NAME = "transform-mismatch"
    SEVERITY = Severity.ERROR
    RUNTIME = True
    TRIGGERS = (b"custom_vjp", b"custom_jvp")

    INVALID = ['''
import jax
import numpy as np

def _host_vjp(x, g):
    return g * np.sum(x) + np.sum(g * x)

@jax.custom_vjp
def scale(x):
    return x * x.sum()

def scale_bwd(x, g):
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return (jax.pure_callback(_host_vjp, out, x, g, vmap_method="broadcast_all"),)

scale.defvjp(lambda x: (scale(x), x), scale_bwd)
''']
    VALID = ['''
import jax
import numpy as np

def _host_vjp(x, g):
    return g * np.sum(x) + np.sum(g * x)

@jax.custom_vjp
def scale(x):
    return x * x.sum()

def scale_bwd(x, g):
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return (jax.pure_callback(_host_vjp, out, x, g, vmap_method="sequential"),)

scale.defvjp(lambda x: (scale(x), x), scale_bwd)
''']
