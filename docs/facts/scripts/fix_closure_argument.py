"""Issue 15: VJP201's fix, a closed-over value passed to the custom_vjp as an explicit argument
with bwd returning None for it. Measures, for a value only the rules read and one the primal reads,
the original (closure) and the rewrite under grad(jit(f)) and differentiated with respect to the value."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("a closed-over value as an explicit argument (VJP201's fix)")
X = jnp.array([0.2, 1.0, -0.7])
C = jnp.array([0.5, 0.5, 0.5])


def rules_only_closure(x, limit):
    @jax.custom_vjp
    def g(v):
        return jnp.sin(v)

    def g_fwd(v):
        return jnp.sin(v), None

    def g_bwd(_, ct):
        return (jnp.clip(ct, -limit, limit),)

    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(x) * 2.0)


def rules_only_argument(x, limit):
    @jax.custom_vjp
    def g(limit, v):
        return jnp.sin(v)

    def g_fwd(limit, v):
        return jnp.sin(v), limit

    def g_bwd(limit, ct):
        return (None, jnp.clip(ct, -limit, limit))

    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(limit, x) * 2.0)


def primal_reads_closure(x, c):
    @jax.custom_vjp
    def g(v):
        return c * jnp.sin(v)

    def g_fwd(v):
        return g(v), jnp.cos(v)

    def g_bwd(cos_v, ct):
        return (c * cos_v * ct,)

    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(x))


def primal_reads_argument(x, c):
    @jax.custom_vjp
    def g(c, v):
        return c * jnp.sin(v)

    def g_fwd(c, v):
        return g(c, v), (jnp.cos(v), c)

    def g_bwd(res, ct):
        cos_v, c = res
        return (None, c * cos_v * ct)

    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(c, x))


print("## only bwd reads the value")
for name, f in (("closure", rules_only_closure), ("argument", rules_only_argument)):
    check(f"{name}: grad wrt x", lambda: jax.grad(f)(X, C), jnp.clip(2.0 * jnp.ones(3), -C, C))
    check(f"{name}: grad(jit(f)) wrt x", lambda: jax.grad(jax.jit(f))(X, C), jnp.clip(2.0 * jnp.ones(3), -C, C))
    check(f"{name}: grad wrt the value", lambda: jax.grad(f, argnums=1)(X, C), jnp.zeros(3))
    check(f"{name}: jit(grad) wrt the value", lambda: jax.jit(jax.grad(f, argnums=1))(X, C), jnp.zeros(3))
print("## the primal reads the value")
for name, f in (("closure", primal_reads_closure), ("argument", primal_reads_argument)):
    check(f"{name}: grad wrt x", lambda: jax.grad(f)(X, C), C * jnp.cos(X))
    check(f"{name}: grad(jit(f)) wrt x", lambda: jax.grad(jax.jit(f))(X, C), C * jnp.cos(X))
    check(f"{name}: grad wrt the value (true: sin x)", lambda: jax.grad(f, argnums=1)(X, C), jnp.sin(X))
