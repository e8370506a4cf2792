"""The pre-2020 custom-derivative API (`jax.custom_transforms`, `jax.defjvp`, `jax.defjvp_all`,
`jax.defvjp`, `jax.defvjp_all`) on current JAX, and what replaces each."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("removed custom_transforms API and its replacements")
X = jnp.array([0.5, -2.0])
OLD = ("custom_transforms", "defjvp", "defjvp_all", "defvjp", "defvjp_all")
print("## 1. the old names")
for name in OLD:
    check(f"jax.{name}", lambda name=name: getattr(jax, name))
    check(f"from jax import {name}", lambda name=name: exec(f"from jax import {name}", {}))
check("import jax.api (its old home)", lambda: exec("import jax.api", {}))
print("## 2. replacements")


@jax.custom_gradient
def clipped_identity(x):  # defvjp_all's (out, vjp_fn) form
    return x, lambda g: (jnp.clip(g, -1.0, 1.0),)


check("custom_gradient: grad of 3 * clipped_identity(x)", lambda: jax.grad(
    lambda x: (3.0 * clipped_identity(x)).sum())(X), jnp.ones(2))


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


softplus.defjvps(lambda t, ans, x: jax.nn.sigmoid(x) * t)  # defjvp's per-argument rules
check("custom_jvp + defjvps(rule(t, ans, x))", lambda: jax.grad(lambda x: softplus(x).sum())(X),
      jax.nn.sigmoid(X))


@jax.custom_jvp
def cube(x):
    return x ** 3


cube.defjvp(lambda primals, tangents: (cube(primals[0]), 3 * primals[0] ** 2 * tangents[0]))  # defjvp_all's form
check("custom_jvp + defjvp(rule(primals, tangents))", lambda: jax.grad(lambda x: cube(x).sum())(X), 3 * X ** 2)
