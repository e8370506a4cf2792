"""A custom_vjp bwd that casts the cotangent to a fixed dtype (VJP328, jax-ml/jax#27144).

bwd returns `g.astype(jnp.float32)` (or `jnp.asarray(g, dtype=jnp.float32)`) for an identity-like
primal; float16, bfloat16 and float32 inputs; plain `grad`, and the custom_vjp inside `lax.scan`
and `fori_loop`; then the form that casts back to the input's dtype."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("bwd casting the cotangent to a fixed dtype")


def make(cast_back):
    @jax.custom_vjp
    def guard(x):
        return x

    def fwd(x):
        return x, x  # a residual must be a JAX value: `x.dtype` itself is not

    def bwd(x, g):
        up = g.astype(jnp.float32)
        return (up.astype(x.dtype) if cast_back == "x" else up.astype(g.dtype) if cast_back == "g" else up,)

    guard.defvjp(fwd, bwd)
    return guard


def asarray_guard():
    @jax.custom_vjp
    def guard(x):
        return x

    guard.defvjp(lambda x: (x, None), lambda _, g: (jnp.asarray(g, dtype=jnp.float32),))
    return guard


def dtype_residual():
    @jax.custom_vjp
    def guard(x):
        return x

    guard.defvjp(lambda x: (x, x.dtype), lambda dtype, g: (g.astype(dtype),))
    return guard


x16 = jnp.array([1.0, 2.0], jnp.float16)
check("residual `x.dtype` (a dtype object): grad", lambda: jax.grad(lambda v: dtype_residual()(v).sum())(x16))
for label, guard in [("g.astype(float32)", make(None)), ("jnp.asarray(g, dtype=float32)", asarray_guard()),
                     ("cast back to x.dtype", make("x")), ("cast back to g.dtype", make("g"))]:
    for dt in (jnp.float16, jnp.bfloat16, jnp.float32):
        x = jnp.array([1.0, -2.0, 4.0], dt)
        name = jnp.dtype(dt).name
        check(f"{label}, {name}: grad dtype", lambda: jax.grad(lambda v: (guard(v) * 0.5).sum())(x).dtype)
        check(f"{label}, {name}: grad through scan", lambda: jax.grad(
            lambda v: jax.lax.scan(lambda c, _: (guard(c) * 0.5, None), v, None, length=3)[0].sum())(x).dtype)
        check(f"{label}, {name}: grad through fori_loop", lambda: jax.grad(
            lambda v: jax.lax.fori_loop(0, 3, lambda i, c: guard(c) * 0.5, v).sum())(x).dtype)
