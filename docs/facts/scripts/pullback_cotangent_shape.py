"""A `jax.vjp` pullback saved by fwd and called in bwd with a reshaped cotangent (VJP322).

fwd returns `jax.vjp(f, x)` (the output and its pullback) or saves the pullback beside other
residuals; bwd calls it with `jnp.sum(g)`, `g.mean()`, `g[0]` or `g` itself, for vector and
scalar outputs (jax-ml/jax#7238)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("pullback given a reshaped cotangent")


def damped(x):
    return jnp.sin(x) * jnp.exp(-x)


def make(reshape, direct=True):
    @jax.custom_vjp
    def smooth(x):
        return damped(x)

    def fwd(x):
        if direct:
            return jax.vjp(damped, x)
        out, pull = jax.vjp(damped, x)
        return out, (pull, x)

    def bwd(res, g):
        pull = res if direct else res[0]
        return pull(reshape(g))

    smooth.defvjp(fwd, bwd)
    return smooth


V, M, S = jnp.array([0.1, 0.2, 0.3]), jnp.ones((2, 3)), jnp.float32(0.4)
for label, reshape in [("pull(jnp.sum(g))", jnp.sum), ("pull(g.mean())", lambda g: g.mean()),
                       ("pull(g[0])", lambda g: g[0]), ("pull(g)", lambda g: g)]:
    for direct in (True, False):
        f = make(reshape, direct)
        how = "fwd returns jax.vjp(...)" if direct else "pullback saved beside x"
        for name, x in [("vector", V), ("matrix", M), ("scalar", S)]:
            if label == "pull(g[0])" and name == "scalar":
                continue
            loss = lambda x: jnp.sum(f(x))  # noqa: E731
            check(f"{label}, {how}, {name} x: grad", lambda: jax.grad(loss)(x))
            check(f"{label}, {how}, {name} x: jit(grad)", lambda: jax.jit(jax.grad(loss))(x))
        check(f"{label}, {how}, vector x: vmap(grad)", lambda: jax.vmap(jax.grad(loss))(M))
        check(f"{label}, {how}, vector x: eager call", lambda: f(V))
