"""Held-out round: (A) a PRNG key in a custom_jvp nondiff slot (VJP106), (B) a custom_jvp tangent
computed through `lax.while_loop` (VJP601). jax-ml/jax#29342, jax-ml/jax#18311."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("PRNG keys in nondiff slots; tangents through while_loop")

X = jnp.array([0.4, -0.9])
KEYS = jax.random.split(jax.random.PRNGKey(0), 3)


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def noisy(x, key):
    return x * jax.random.normal(key, x.shape)


@noisy.defjvp
def noisy_jvp(key, primals, tangents):
    (x,), (t,) = primals, tangents
    return noisy(x, key), t * jax.random.normal(key, x.shape)


@jax.custom_jvp
def noisy_diff(x, key):  # the key in a differentiable slot: its tangent is float0
    return x * jax.random.normal(key, x.shape)


@noisy_diff.defjvp
def noisy_diff_jvp(primals, tangents):
    (x, key), (t, _) = primals, tangents
    return noisy_diff(x, key), t * jax.random.normal(key, x.shape)


def ref(x):
    return sum(jax.random.normal(k, x.shape) for k in KEYS)


def scan_loss(f, keys):
    return lambda x: jax.lax.scan(lambda a, k: (a + jnp.sum(f(x, k)), None), 0.0, keys)[0]


print("## (A) key in the nondiff slot")
check("key nondiff, scan xs: eager", lambda: scan_loss(noisy, KEYS)(X))
check("key nondiff, scan xs: grad", lambda: jax.grad(scan_loss(noisy, KEYS))(X), ref(X))
check("key nondiff, scan xs: jit(grad)", lambda: jax.jit(jax.grad(scan_loss(noisy, KEYS)))(X), ref(X))
typed = jax.random.split(jax.random.key(0), 3)
check("typed key nondiff, scan xs: grad", lambda: jax.grad(scan_loss(noisy, typed))(X))
check("key nondiff, vmap over keys: grad",
      lambda: jax.grad(lambda x: jnp.sum(jax.vmap(lambda k: noisy(x, k))(KEYS)))(X), ref(X))
check("key nondiff, KEYS[0] indexed in a fori_loop body: grad",
      lambda: jax.grad(lambda x: jax.lax.fori_loop(0, 3, lambda i, a: a + jnp.sum(noisy(x, KEYS[0])), 0.0))(X),
      3 * jax.random.normal(KEYS[0], X.shape))
check("key nondiff, eager loop: grad",
      lambda: jax.grad(lambda x: sum(jnp.sum(noisy(x, k)) for k in KEYS))(X), ref(X))
jitted_seed = jax.jit(lambda x, seed: jnp.sum(noisy(x, jax.random.PRNGKey(seed))))
jitted_const = jax.jit(lambda x: jnp.sum(noisy(x, jax.random.PRNGKey(3))))
check("key made from a jit argument in the jit: jit", lambda: jitted_seed(X, 3))
check("key made from a jit argument in the jit: grad(jit)", lambda: jax.grad(jitted_seed)(X, 3),
      jax.random.normal(jax.random.PRNGKey(3), X.shape))
check("key made from a jit argument in the jit: jit(grad)",
      lambda: jax.jit(jax.grad(lambda x, s: jnp.sum(noisy(x, jax.random.PRNGKey(s)))))(X, 3),
      jax.random.normal(jax.random.PRNGKey(3), X.shape))
check("constant key made in the jit: grad(jit)", lambda: jax.grad(jitted_const)(X),
      jax.random.normal(jax.random.PRNGKey(3), X.shape))
print("## (A) fix: the key in a differentiable slot")
check("key diff slot, scan xs: grad", lambda: jax.grad(scan_loss(noisy_diff, KEYS))(X), ref(X))
check("key diff slot, scan xs: jit(grad)", lambda: jax.jit(jax.grad(scan_loss(noisy_diff, KEYS)))(X), ref(X))
check("typed key diff slot, scan xs: grad", lambda: jax.grad(scan_loss(noisy_diff, typed))(X))


def solve(a, b, steps=None):
    """Richardson iteration for a * y = b; a while_loop to a tolerance, or a fori_loop."""
    def step(y):
        return y + 0.5 * (b - a * y)
    if steps is not None:
        return jax.lax.fori_loop(0, steps, lambda i, y: step(y), jnp.zeros_like(b))
    return jax.lax.while_loop(lambda c: jnp.max(jnp.abs(a * c[1] - b)) > 1e-6,
                              lambda c: (c[0] + 1, step(c[1])), (0, jnp.zeros_like(b)))[1]


def make(kind):
    @jax.custom_jvp
    def f(x):
        return x ** 2

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if kind == "while on tangent":
            dt = solve(jnp.ones_like(x), 2.0 * x * t)
        elif kind == "fori (static count) on tangent":
            dt = solve(jnp.ones_like(x), 2.0 * x * t, steps=40)
        elif kind == "while on primal only":
            dt = solve(jnp.ones_like(x), 2.0 * x) * t
        else:
            raise ValueError(kind)
        return x ** 2, dt

    return f


X2 = jnp.array([1.5, -0.5])
for kind in ("while on tangent", "fori (static count) on tangent", "while on primal only"):
    f = make(kind)
    print(f"## (B) {kind}")
    check(f"{kind}: jvp", lambda: jax.jvp(f, (X2,), (jnp.ones(2),))[1], 2.0 * X2)
    check(f"{kind}: jacfwd", lambda: jax.jacfwd(f)(X2), jnp.diag(2.0 * X2))
    check(f"{kind}: grad", lambda: jax.grad(lambda v: jnp.sum(f(v)))(X2), 2.0 * X2)
    check(f"{kind}: jit(grad)", lambda: jax.jit(jax.grad(lambda v: jnp.sum(f(v))))(X2), 2.0 * X2)
