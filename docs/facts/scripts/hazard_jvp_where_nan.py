"""VJP607: a custom_jvp rule guarding a tangent's unsafe coefficient with a single jnp.where."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("a jvp rule's tangent selected by one jnp.where around a division or a log")


def make(tangent):
    @jax.custom_jvp
    def f(x):
        return jnp.where(x > 0.0, x * jnp.log(jnp.where(x > 0.0, x, 1.0)), 0.0)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), tangent(x, t)

    return f


X = jnp.array([0.0, 0.5, 2.0])
safe = lambda x: jnp.where(x > 0.0, x, 1.0)  # noqa: E731
single_div = make(lambda x, t: jnp.where(x > 0.0, t * (1.0 + jnp.log(safe(x))) + t / x * 0.0, 0.0))
single_log = make(lambda x, t: jnp.where(x > 0.0, t * (1.0 + jnp.log(x)), 0.0))
double = make(lambda x, t: jnp.where(x > 0.0, t * (1.0 + jnp.log(safe(x))), 0.0))
ref = jnp.array([0.0, 1.0 + jnp.log(0.5), 1.0 + jnp.log(2.0)])
for label, f in (("t / x in the taken branch, x = 0 excluded", single_div), ("t * log(x), x = 0 excluded", single_log),
                 ("double where: log(safe(x))", double)):
    print(f"## {label}")
    check(f"{label}: jvp", lambda: jax.jvp(f, (X,), (jnp.ones(3),))[1], ref)
    check(f"{label}: grad (elementwise)", lambda: jax.vmap(jax.grad(f))(X), ref)
    check(f"{label}: jit(grad)", lambda: jax.jit(jax.vmap(jax.grad(f)))(X), ref)


@jax.custom_jvp
def soft_root(x):
    return jnp.where(x < 1.0, x, jnp.sqrt(x))


@soft_root.defjvp
def soft_root_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return soft_root(x), jnp.where(x < 1.0, dx, dx / (2.0 * jnp.sqrt(x)))


print("## the report's shape: dx / (2 sqrt(x)) in the branch x < 1 excludes")
R = jnp.array([0.0, 0.5, 4.0])
check("soft_root: jvp", lambda: jax.jvp(soft_root, (R,), (jnp.ones(3),))[1], jnp.array([1.0, 1.0, 0.25]))
check("soft_root: grad", lambda: jax.vmap(jax.grad(soft_root))(R), jnp.array([1.0, 1.0, 0.25]))
