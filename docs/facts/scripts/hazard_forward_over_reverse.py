"""Issue 18: forward mode over reverse mode (hessian, jacfwd(grad), jvp of a gradient) of a
custom_vjp, by what its fwd and bwd compute (VJP315)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("forward over reverse of a custom_vjp")


def build(fwd_kind: str):
    """A custom_vjp f(x) = sin(x) whose fwd computes the value inline, calls f itself, or whose
    bwd calls another custom_vjp (`scale`) on the residual."""
    @jax.custom_vjp
    def scale(v):
        return 1.0 * v

    scale.defvjp(lambda v: (v, None), lambda _, g: (g,))

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        y = f(x) if fwd_kind == "fwd calls f" else jnp.sin(x)
        return y, x

    def f_bwd(x, g):
        c = scale(jnp.cos(x)) if fwd_kind == "bwd calls a custom_vjp" else jnp.cos(x)
        return (c * g,)

    f.defvjp(f_fwd, f_bwd)
    return f


X = jnp.float32(0.8)
for kind in ("inline", "fwd calls f", "bwd calls a custom_vjp"):
    f = build(kind)
    print(f"## fwd/bwd: {kind}")
    g = jax.grad(f)
    check(f"{kind}: hessian", lambda: jax.hessian(f)(X), -jnp.sin(X))
    check(f"{kind}: jacfwd(grad)", lambda: jax.jacfwd(g)(X), -jnp.sin(X))
    check(f"{kind}: jacfwd(jacrev)", lambda: jax.jacfwd(jax.jacrev(f))(X), -jnp.sin(X))
    check(f"{kind}: jvp(grad)", lambda: jax.jvp(g, (X,), (1.0,))[1], -jnp.sin(X))
    check(f"{kind}: linearize(grad) applied", lambda: jax.linearize(g, X)[1](1.0), -jnp.sin(X))
    check(f"{kind}: jacfwd(jit(grad))", lambda: jax.jacfwd(jax.jit(g))(X), -jnp.sin(X))
    check(f"{kind}: jvp(jit(grad))", lambda: jax.jvp(jax.jit(g), (X,), (1.0,))[1], -jnp.sin(X))
    check(f"{kind}: vmap of jvp(jit(grad))",
          lambda: jax.vmap(lambda t: jax.jvp(jax.jit(g), (X,), (t,))[1])(jnp.ones(2)), -jnp.sin(X) * jnp.ones(2))
    check(f"{kind}: hessian of a loss calling f", lambda: jax.hessian(lambda x: 2.0 * f(x))(X), -2.0 * jnp.sin(X))
    check(f"{kind}: jacrev(jacrev)", lambda: jax.jacrev(jax.jacrev(f))(X), -jnp.sin(X))
    check(f"{kind}: grad(grad)", lambda: jax.grad(jax.grad(f))(X), -jnp.sin(X))
    check(f"{kind}: jvp of f", lambda: jax.jvp(f, (X,), (1.0,))[1], jnp.cos(X))
    check(f"{kind}: jvp of jit(f)", lambda: jax.jvp(jax.jit(f), (X,), (1.0,))[1], jnp.cos(X))
