"""jax.closure_convert(fun, *example_args) -> (converted, consts): what it hoists."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from harness import check, header

header("jax.closure_convert")
X = jnp.array([0.5, 1.0, 2.0])
SEEN: dict = {}


def hoisted(c, make=lambda c: c):
    value = make(c)
    conv, consts = jax.closure_convert(lambda x: value * jnp.sin(x), X)
    SEEN["consts"] = [type(k).__name__ for k in consts]
    return conv(X, *consts).sum()


print("## 1. what is hoisted into consts")
check("concrete float closed over (eager)", lambda: hoisted(2.0), (2 * jnp.sin(X)).sum())
print(f"  consts: {SEEN.pop('consts')}")
check("concrete jnp array closed over (eager)", lambda: hoisted(jnp.float32(2.0)), (2 * jnp.sin(X)).sum())
print(f"  consts: {SEEN.pop('consts')}")
check("grad tracer (grad_c)", lambda: jax.grad(hoisted)(2.0), jnp.sin(X).sum())
print(f"  consts: {SEEN.pop('consts')}")
check("jit tracer", lambda: jax.jit(hoisted)(2.0), (2 * jnp.sin(X)).sum())
print(f"  consts: {SEEN.pop('consts')}")
check("vmap tracer", lambda: jax.vmap(hoisted)(jnp.array([1.0, 2.0])), jnp.sin(X).sum() * jnp.array([1.0, 2.0]))
print(f"  consts: {SEEN.pop('consts')}")
check("int32 jit tracer", lambda: jax.jit(lambda n: hoisted(n))(jnp.int32(2)), (2 * jnp.sin(X)).sum())
print(f"  consts: {SEEN.pop('consts')}")
check("np.ndarray closed over under jit", lambda: jax.jit(lambda: hoisted(np.float32(2.0)))(), (2 * jnp.sin(X)).sum())
print(f"  consts: {SEEN.pop('consts')}")

print("## 2. misuse")
check("call converted without consts", lambda: jax.jit(
    lambda c: jax.closure_convert(lambda x: c * jnp.sin(x), X)[0](X))(2.0))
check("example args of a different shape than the call", lambda: jax.jit(
    lambda c: (lambda cv: cv[0](jnp.ones(4), *cv[1]))(jax.closure_convert(lambda x: c * jnp.sin(x), X)))(2.0))
check("fun returning a non-array (a Python str)", lambda: jax.closure_convert(lambda x: "s", X))
