"""Issue 18: what JAX does when a custom_vjp's rules (not its primal) close over a value of the
enclosing function (VJP201's message), and when a factory-made closure over a traced value is
passed in a nondiff position (VJP104's message)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("closures in rules, factory closures in nondiff slots")
Y, X = 0.7, 1.3


def build(where):
    """outer(y, x) = g(x), g a custom_vjp whose derivative is y * cos: the closure over y is in bwd
    only, in fwd only (a residual), or in the primal and bwd. Only in the last does g's value
    depend on y, so d/dy is 0 for the first two (the primal ignores y) and sin(x) for the last."""
    def outer(y, x):
        @jax.custom_vjp
        def g(u):
            return (y if where == "primal" else 1.0) * jnp.sin(u)

        def g_fwd(u):
            return g(u), (u, y if where == "fwd" else 1.0)

        def g_bwd(res, ct):
            u, scale = res
            scale = y if where in ("bwd", "primal") else scale
            return (scale * jnp.cos(u) * ct,)

        g.defvjp(g_fwd, g_bwd)
        return g(x)
    return outer


def inner_grad(where):
    """outer(y) = grad(g)(X): the custom_vjp is differentiated inside (jax tests' pattern)."""
    def outer(y):
        @jax.custom_vjp
        def g(x):
            return 2.0 * jnp.sin(x)

        def g_fwd(x):
            return g(x), (y if where == "fwd" else 1.0)

        def g_bwd(res, ct):
            scale = y if where == "bwd" else res
            return (2.0 * scale * jnp.cos(X) * ct,)

        g.defvjp(g_fwd, g_bwd)
        return jax.grad(g)(X)
    return outer


print("## 1. rules close over y, the caller differentiates g inside (outer(y) = grad(g)(X))")
for where in ("bwd", "fwd"):
    f = inner_grad(where)
    ref = 2.0 * Y * jnp.cos(X)
    check(f"{where}: eager", lambda: f(Y), ref)
    check(f"{where}: jit", lambda: jax.jit(f)(Y), ref)
    check(f"{where}: vmap", lambda: jax.vmap(f)(jnp.array([Y, Y])), jnp.array([ref, ref]))
    check(f"{where}: grad wrt y", lambda: jax.grad(f)(Y), 2.0 * jnp.cos(X))
    check(f"{where}: jit(grad wrt y)", lambda: jax.jit(jax.grad(f))(Y), 2.0 * jnp.cos(X))
    check(f"{where}: grad(jit) wrt y", lambda: jax.grad(jax.jit(f))(Y), 2.0 * jnp.cos(X))

print("## 2. rules close over y, the caller differentiates outer(y, x) = g(x)")
for where in ("bwd", "fwd", "primal"):
    f = build(where)
    value = Y * jnp.sin(X) if where == "primal" else jnp.sin(X)
    check(f"{where}: eager", lambda: f(Y, X), value)
    check(f"{where}: jit", lambda: jax.jit(f)(Y, X), value)
    check(f"{where}: vmap over y", lambda: jax.vmap(f, (0, None))(jnp.array([Y, Y]), X), jnp.array([value, value]))
    check(f"{where}: grad wrt x", lambda: jax.grad(f, 1)(Y, X), Y * jnp.cos(X))
    check(f"{where}: jit(grad wrt x)", lambda: jax.jit(jax.grad(f, 1))(Y, X), Y * jnp.cos(X))
    check(f"{where}: grad(jit) wrt x", lambda: jax.grad(jax.jit(f), 1)(Y, X), Y * jnp.cos(X))
    check(f"{where}: vmap(grad wrt x) over y",
          lambda: jax.vmap(jax.grad(f, 1), (0, None))(jnp.array([Y, Y]), X), jnp.array([Y, Y]) * jnp.cos(X))
    dy = jnp.sin(X) if where == "primal" else 0.0
    check(f"{where}: grad wrt y", lambda: jax.grad(f, 0)(Y, X), dy)
    check(f"{where}: jit(grad wrt y)", lambda: jax.jit(jax.grad(f, 0))(Y, X), dy)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)


def apply_fwd(fn, x):
    return fn(x), x


def apply_bwd(fn, x, g):
    return (jax.vjp(fn, x)[1](g)[0],)


apply.defvjp(apply_fwd, apply_bwd)


def make_scale(w):
    return lambda v: w * jnp.sin(v)


def loss_lambda(w, x):
    return jnp.sum(apply(make_scale(w), x))


def loss_partial(w, x):
    return jnp.sum(apply(partial(jnp.multiply, w), x))


def loss_tree_partial(w, x):
    return jnp.sum(apply(jax.tree_util.Partial(jnp.multiply, w), x))


print("## 3. a factory-made closure over w (traced) in the nondiff slot of apply(fn, x)")
W, XS = 0.5, jnp.array([0.3, 1.1])
for name, loss in (("lambda", loss_lambda), ("functools.partial", loss_partial),
                   ("jax.tree_util.Partial", loss_tree_partial)):
    check(f"{name}: jit", lambda: jax.jit(loss)(W, XS))
    check(f"{name}: grad wrt x", lambda: jax.grad(loss, 1)(W, XS))
    check(f"{name}: jit(grad wrt x)", lambda: jax.jit(jax.grad(loss, 1))(W, XS))
    check(f"{name}: grad(jit) wrt x", lambda: jax.grad(jax.jit(loss), 1)(W, XS))
    check(f"{name}: grad wrt w", lambda: jax.grad(loss, 0)(W, XS))
    check(f"{name}: jit(grad wrt w)", lambda: jax.jit(jax.grad(loss, 0))(W, XS))
    check(f"{name}: grad(jit) wrt w", lambda: jax.grad(jax.jit(loss), 0)(W, XS))
    check(f"{name}: grad wrt w, the call staged by checkpoint",
          lambda: jax.grad(lambda w, x: jax.checkpoint(loss)(w, x), 0)(W, XS))
    check(f"{name}: vmap over w", lambda: jax.vmap(loss, (0, None))(jnp.array([W, W]), XS))
