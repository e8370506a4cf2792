"""Issue 15: VJP201's fix for a custom_jvp. A custom_jvp `g` defined inside `f(x, value)` closes over
`value` ("closure"); the candidate rewrites pass it explicitly: as a leading primal whose tangent
the jvp rule ignores ("argument"), or through nondiff_argnums ("nondiff"). Measured for a value only
the jvp rule reads and one the primal reads, under the transformations the harness checks and
differentiated with respect to the value."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("a closed-over value in a custom_jvp, passed explicitly (VJP201's fix)")
X = jnp.array([0.2, 1.0, -0.7])
C = jnp.array([0.5, 0.5, 0.5])


def rules_only_closure(x, limit):
    @jax.custom_jvp
    def g(v):
        return jnp.sin(v)

    @g.defjvp
    def g_jvp(primals, tangents):
        (v,), (t,) = primals, tangents
        return jnp.sin(v), limit * jnp.cos(v) * t

    return jnp.sum(g(x) * 2.0)


def rules_only_argument(x, limit):
    @jax.custom_jvp
    def g(limit, v):
        return jnp.sin(v)

    @g.defjvp
    def g_jvp(primals, tangents):
        (limit, v), (_, t) = primals, tangents
        return jnp.sin(v), limit * jnp.cos(v) * t

    return jnp.sum(g(limit, x) * 2.0)


def rules_only_nondiff(x, limit):
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def g(limit, v):
        return jnp.sin(v)

    @g.defjvp
    def g_jvp(limit, primals, tangents):
        (v,), (t,) = primals, tangents
        return jnp.sin(v), limit * jnp.cos(v) * t

    return jnp.sum(g(limit, x) * 2.0)


def primal_reads_closure(x, c):
    @jax.custom_jvp
    def g(v):
        return c * jnp.sin(v)

    @g.defjvp
    def g_jvp(primals, tangents):
        (v,), (t,) = primals, tangents
        return c * jnp.sin(v), c * jnp.cos(v) * t

    return jnp.sum(g(x))


def primal_reads_argument(x, c):
    @jax.custom_jvp
    def g(c, v):
        return c * jnp.sin(v)

    @g.defjvp
    def g_jvp(primals, tangents):
        (c, v), (_, t) = primals, tangents
        return c * jnp.sin(v), c * jnp.cos(v) * t

    return jnp.sum(g(c, x))


CLIP = 2.0 * C * jnp.cos(X)  # the jvp rule scales the tangent by the value
for title, cases, wrt_x, wrt_c in (
        ("## only the jvp rule reads the value", (("closure", rules_only_closure), ("argument", rules_only_argument),
                                                  ("nondiff", rules_only_nondiff)), CLIP, jnp.zeros(3)),
        ("## the primal reads the value", (("closure", primal_reads_closure), ("argument", primal_reads_argument)),
         C * jnp.cos(X), jnp.sin(X))):
    print(title)
    for name, f in cases:
        check(f"{name}: value", lambda: f(X, C))
        check(f"{name}: jit", lambda: jax.jit(f)(X, C))
        check(f"{name}: vmap", lambda: jax.vmap(f)(jnp.stack([X, X]), jnp.stack([C, C])))
        check(f"{name}: grad wrt x", lambda: jax.grad(f)(X, C), wrt_x)
        check(f"{name}: jit(grad) wrt x", lambda: jax.jit(jax.grad(f))(X, C), wrt_x)
        check(f"{name}: vmap(grad) wrt x", lambda: jax.vmap(jax.grad(f))(jnp.stack([X, X]), jnp.stack([C, C]))[0],
              wrt_x)
        check(f"{name}: grad(jit(f)) wrt x", lambda: jax.grad(jax.jit(f))(X, C), wrt_x)
        check(f"{name}: grad wrt the value", lambda: jax.grad(f, argnums=1)(X, C), wrt_c)
        check(f"{name}: grad wrt both", lambda: jax.grad(f, argnums=(0, 1))(X, C), (wrt_x, wrt_c))
        check(f"{name}: jvp wrt the value", lambda: jax.jvp(lambda c: f(X, c), (C,), (jnp.ones(3),))[1],
              jnp.sum(wrt_c))
