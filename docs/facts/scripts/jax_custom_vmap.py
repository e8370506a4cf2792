"""jax.custom_batching.custom_vmap wrapping (and wrapped by) a custom_vjp."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from harness import check, header

header("jax.custom_batching.custom_vmap")
X = jnp.array([0.5, 1.0, 2.0])
XS = jnp.stack([X, 2 * X])
SEEN: dict = {}


@jax.custom_vjp
def vjp_sin(x):
    return jnp.sin(x)


vjp_sin.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (3.0 * c * g,))  # 3x: shows the rule ran


@custom_vmap
def outer(x):
    return vjp_sin(x)


@outer.def_vmap
def outer_rule(axis_size, in_batched, x):
    SEEN["rule"] = (axis_size, in_batched)
    return vjp_sin(x), in_batched[0]


print("## 1. custom_vmap(fn calling a custom_vjp)")
check("eager", lambda: outer(X), jnp.sin(X))
check("vmap", lambda: jax.vmap(outer)(XS), jnp.sin(XS))
print(f"  rule called with (axis_size, in_batched) = {SEEN.pop('rule', None)}")
check("grad", lambda: jax.grad(lambda x: outer(x).sum())(X), 3.0 * jnp.cos(X))
check("jit(grad)", lambda: jax.jit(jax.grad(lambda x: outer(x).sum()))(X), 3.0 * jnp.cos(X))
check("vmap(grad)", lambda: jax.vmap(jax.grad(lambda x: outer(x).sum()))(XS), 3.0 * jnp.cos(XS))
check("grad(vmap)", lambda: jax.grad(lambda xs: jax.vmap(outer)(xs).sum())(XS), 3.0 * jnp.cos(XS))
check("jvp", lambda: jax.jvp(outer, (X,), (X,)))
check("def_vmap returns", lambda: repr(outer.def_vmap(outer_rule))[:30])

print("## 2. custom_vjp(fn decorated with custom_vmap)")


@custom_vmap
def batched_sin(x):
    return jnp.sin(x)


batched_sin.def_vmap(lambda n, b, x: (jnp.sin(x), b[0]))


@jax.custom_vjp
def wrapped(x):
    return batched_sin(x)


wrapped.defvjp(lambda x: (batched_sin(x), jnp.cos(x)), lambda c, g: (3.0 * c * g,))
check("grad", lambda: jax.grad(lambda x: wrapped(x).sum())(X), 3.0 * jnp.cos(X))
check("vmap(grad)", lambda: jax.vmap(jax.grad(lambda x: wrapped(x).sum()))(XS), 3.0 * jnp.cos(XS))
check("grad of the bare custom_vmap fn", lambda: jax.grad(lambda x: batched_sin(x).sum())(X))

print("## 3. rule misuse")


def bad_rule(rule):
    @custom_vmap
    def f(x):
        return jnp.sin(x)
    f.def_vmap(rule)
    return jax.vmap(f)(XS)


check("rule returns only the output", lambda: bad_rule(lambda n, b, x: jnp.sin(x)))
check("rule (in_batched, x): forgets axis_size", lambda: bad_rule(lambda b, x: (jnp.sin(x), b[0])))
check("rule returns out_batched as a list", lambda: bad_rule(lambda n, b, x: (jnp.sin(x), [True])))
check("rule says False for a batched output", lambda: bad_rule(lambda n, b, x: (jnp.sin(x), False)))
check("call with no def_vmap", lambda: custom_vmap(lambda x: x)(X))
check("vmap with no def_vmap", lambda: jax.vmap(custom_vmap(lambda x: x))(XS))
check("nondiff-style extra arg: custom_vmap(f)(n, x) with n int", lambda: jax.vmap(
    (lambda f: (f.def_vmap(lambda s, b, n, x: (jnp.sin(x) * n, b[1])), f)[1])(custom_vmap(lambda n, x: jnp.sin(x) * n)),
    in_axes=(None, 0))(2, XS), 2 * jnp.sin(XS))
