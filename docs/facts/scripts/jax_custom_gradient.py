"""jax.custom_gradient: f(*args) -> (out, vjp_fn); vjp_fn(g) -> one cotangent per argument."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("jax.custom_gradient")
X = jnp.array([0.5, 1.0, 2.0])
Y = jnp.array([1.0, 2.0, 3.0])


@jax.custom_gradient
def one(x):
    return jnp.sin(x), lambda g: (g * jnp.cos(x),)


@jax.custom_gradient
def one_bare(x):
    return jnp.sin(x), lambda g: g * jnp.cos(x)


@jax.custom_gradient
def two(x, y):
    return jnp.sin(x) * y, lambda g: (g * jnp.cos(x) * y, g * jnp.sin(x))


print("## 1. correct use: the vjp closure over x is the design, not a hazard")
for name, fn in (("eager", lambda f: f), ("jit", jax.jit)):
    check(f"one: grad ({name})", lambda: fn(jax.grad(lambda x: one(x).sum()))(X), jnp.cos(X))
check("one: vmap(grad)", lambda: jax.vmap(jax.grad(lambda x: one(x)))(X), jnp.cos(X))
check("one: grad(jit)", lambda: jax.grad(lambda x: jax.jit(one)(x).sum())(X), jnp.cos(X))
check("one: value (no grad)", lambda: one(X), jnp.sin(X))
check("one_bare: vjp returns a bare array for one arg", lambda: jax.grad(lambda x: one_bare(x).sum())(X), jnp.cos(X))
check("two: grad w.r.t. (x, y)", lambda: jax.grad(lambda x, y: two(x, y).sum(), argnums=(0, 1))(X, Y),
      (jnp.cos(X) * Y, jnp.sin(X)))
check("two: keyword call two(x, y=y)", lambda: jax.grad(lambda x: two(x, y=Y).sum())(X), jnp.cos(X) * Y)
check("type of the decorated object", lambda: type(one).__name__)

print("## 2. misuse")


@jax.custom_gradient
def short(x, y):
    return jnp.sin(x) * y, lambda g: (g * jnp.cos(x) * y,)


@jax.custom_gradient
def bare_two(x, y):
    return jnp.sin(x) * y, lambda g: g * jnp.cos(x) * y


@jax.custom_gradient
def not_pair(x):
    return jnp.sin(x)


@jax.custom_gradient
def vjp_two_params(x):
    return jnp.sin(x), lambda g, extra: (g * jnp.cos(x),)


@jax.custom_gradient
def none_ct(x, y):
    return jnp.sin(x) * y, lambda g: (None, g * jnp.sin(x))


@jax.custom_gradient
def wrong_shape(x):
    return jnp.sin(x), lambda g: (jnp.sum(g),)


check("two args, vjp returns a 1-tuple", lambda: jax.grad(lambda x: short(x, Y).sum())(X))
check("two args, vjp returns a bare array", lambda: jax.grad(lambda x: bare_two(x, Y).sum())(X))
check("f returns a bare value (no vjp): eager call", lambda: not_pair(X))
check("f returns a bare value (no vjp): grad", lambda: jax.grad(lambda x: not_pair(x).sum())(X))
check("vjp_fn takes two parameters", lambda: jax.grad(lambda x: vjp_two_params(x).sum())(X))
check("vjp returns None for x: grad_x", lambda: jax.grad(lambda x: none_ct(x, Y).sum())(X))
check("vjp returns a scalar for f32[3]", lambda: jax.grad(lambda x: wrong_shape(x).sum())(X))
check("forward mode: jax.jvp", lambda: jax.jvp(one, (X,), (X,)))


def closes_over_traced_outer(c):
    @jax.custom_gradient
    def inner(x):
        return c * jnp.sin(x), lambda g: (g * c * jnp.cos(x),)
    return inner(X).sum()


check("f closes over a differentiated outer value c, grad_c", lambda: jax.grad(closes_over_traced_outer)(2.0))
check("same, jit(grad_c)", lambda: jax.jit(jax.grad(closes_over_traced_outer))(2.0))
check("f closes over a jit tracer c, jit of grad_x", lambda: jax.jit(lambda c: jax.grad(
    lambda x: (lambda f: f(x))(jax.custom_gradient(lambda x: (c * jnp.sin(x), lambda g: (g * c * jnp.cos(x),))))
    .sum())(X))(2.0), 2 * jnp.cos(X))
check("int argument: vjp returns a float ct for it", lambda: jax.grad(
    lambda x: jax.custom_gradient(lambda x, n: (x * n, lambda g: (g * n, 1.0)))(x, 3).sum())(X), 3 * jnp.ones(3))
