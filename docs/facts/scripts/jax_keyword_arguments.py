"""Keyword arguments for positional parameters of custom_vjp, custom_jvp and custom_gradient
functions: which calls bind, and which raise?"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("keyword arguments at calls of custom_vjp / custom_jvp / custom_gradient functions")
X, Y = jnp.array([1.0, -0.5]), jnp.array([0.25, 2.0])


@jax.custom_gradient
def g_sum(x, y, scale=1.0):
    return scale * (x + y), lambda g: (scale * g, scale * g, None)


@jax.custom_gradient
def g_one(x):
    return 2.0 * x, lambda g: (2.0 * g,)


@jax.custom_vjp
def v_sum(x, y, scale=1.0):
    return scale * (x + y)


v_sum.defvjp(lambda x, y, scale: (scale * (x + y), scale), lambda s, g: (s * g, s * g, None))


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def v_nd(x, y, scale=1.0):
    return scale * (x + y)


v_nd.defvjp(lambda x, y, scale: (scale * (x + y), None), lambda scale, _, g: (scale * g, scale * g))


@jax.custom_jvp
def j_sum(x, y, scale=1.0):
    return scale * (x + y)


j_sum.defjvp(lambda p, t: (j_sum(*p), p[2] * (t[0] + t[1])))

print("## 1. custom_gradient")
check("g(x, y, scale=2.0), eager, defaulted param by keyword", lambda: g_sum(X, Y, scale=2.0))
check("g(x, y=y), eager, required param by keyword", lambda: g_sum(X, y=Y))
check("g(x=x), one parameter, by keyword", lambda: g_one(x=X))
check("g(x, y, 2.0), all positional, grad", lambda: jax.grad(lambda x: g_sum(x, Y, 2.0).sum())(X), 2 * jnp.ones(2))
check("g(x), grad", lambda: jax.grad(lambda x: g_one(x).sum())(X), 2 * jnp.ones(2))
check("partial(g, scale=2.0)(x, y)", lambda: partial(g_sum, scale=2.0)(X, Y))
check("g(*(x, y), **{}) (empty)", lambda: g_sum(*(X, Y), **{}))
print("## 2. custom_vjp: keywords bound by the signature")
check("v(x, y, scale=2.0), grad", lambda: jax.grad(lambda x: v_sum(x, Y, scale=2.0).sum())(X), 2 * jnp.ones(2))
check("v(x, y=y), grad", lambda: jax.grad(lambda x: v_sum(x, y=Y).sum())(X), jnp.ones(2))
check("nondiff v(x, y, scale=2.0), grad", lambda: jax.grad(lambda x: v_nd(x, Y, scale=2.0).sum())(X),
      2 * jnp.ones(2))
print("## 3. custom_jvp: keywords bound by the signature")
check("j(x, y, scale=2.0), grad", lambda: jax.grad(lambda x: j_sum(x, Y, scale=2.0).sum())(X), 2 * jnp.ones(2))
check("j(x, y=y), grad", lambda: jax.grad(lambda x: j_sum(x, y=Y).sum())(X), jnp.ones(2))
try:
    g_sum(X, Y, scale=2.0)
except TypeError as exc:
    print("  custom_gradient's message, second line:", str(exc).strip().splitlines()[1])
