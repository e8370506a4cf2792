"""flax.nnx.custom_vjp: what each kind of value does in an int `nondiff_argnums` slot (a Python
int, a Module without arrays, a Module with a Param, a bare Variable, a State of arrays), in each
protocol, eagerly and through each way a caller can trace it (jax.jit / nnx.jit arguments, a
closure, nnx.grad over another argument)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from harness import check, header

header("flax.nnx.custom_vjp: kinds of values in int nondiff slots")
MODES = {"default": {}, "graph_updates=False": {"graph_updates": False}, "graph=False": {"graph": False}}
X = jnp.float32(2.0)


class Counter(nnx.Module):
    """No array anywhere: only a Python int attribute."""

    def __init__(self, n: int) -> None:
        self.n = n


class Scale(nnx.Module):
    def __init__(self) -> None:
        self.w = nnx.Param(jnp.array(3.0))


def value_of(s):
    """The scale a nondiff value stands for."""
    if isinstance(s, Counter):
        return s.n
    if isinstance(s, Scale):
        return s.w[...]
    if isinstance(s, nnx.Variable):
        return s[...]
    if isinstance(s, nnx.State):
        return s["w"][...]
    return s


def scaled(mode: dict):
    """f(s, x) = value_of(s) * sin(x), s in nondiff slot 0."""

    @nnx.custom_vjp(nondiff_argnums=(0,), **mode)
    def f(s, x):
        return value_of(s) * jnp.sin(x)

    def f_fwd(s, x):
        return f(s, x), jnp.cos(x)

    def f_bwd(s, res, g):
        out_g = g[1] if not mode else g
        return (value_of(s) * res * out_g,)

    f.defvjp(f_fwd, f_bwd)
    return f


VALUES = {
    "Python int 3": lambda: 3,
    "Module with an int attribute only (Counter(3))": lambda: Counter(3),
    "Module with a Param (Scale())": lambda: Scale(),
    "bare Variable (nnx.Param(3.0))": lambda: nnx.Param(jnp.array(3.0)),
    "State of a Param (nnx.state(Scale()))": lambda: nnx.state(Scale()),
}
for mode_name, mode in MODES.items():
    print(f"## mode {mode_name}")
    for value_name, make in VALUES.items():
        f = scaled(mode)
        s = make()
        ref = 3.0 * jnp.cos(X)
        print(f"  # {value_name}")
        check("    eager call", lambda: f(s, X))
        check("    jax.grad(x), s closed over", lambda: jax.grad(lambda x: f(s, x))(X), ref)
        check("    jax.jit(grad(x)), s closed over", lambda: jax.jit(jax.grad(lambda x: f(s, x)))(X), ref)
        check("    jax.jit(grad), s a jit argument", lambda: jax.jit(jax.grad(lambda x, s: f(s, x)))(X, s), ref)
        check("    nnx.jit(nnx.grad), s an argument",
              lambda: nnx.jit(nnx.grad(lambda x, s: f(s, x)))(X, s), ref)
        check("    nnx.grad(argnums=0), s a second argument (eager)",
              lambda: nnx.grad(lambda x, s: f(s, x), argnums=0)(X, s), ref)
