"""A custom_vjp bwd returning a ZERO cotangent cast to bfloat16 for a float32 input (VJP328's
"may" on heldout10's `bwd_ct_bf16/fax_root_solve`, judged in e33): does the zero behave as the
cast cotangent of the output does? `jax.grad` eager, and the gradient carried by a
`lax.while_loop` (a gradient-descent loop), for the zero and for `(g * y).astype(bfloat16)`."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def make(kind):
    @jax.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):
        x, y = res
        if kind == "zero":
            cx = jnp.asarray(jnp.zeros_like(x), jnp.bfloat16)
        else:
            cx = (g * y).astype(jnp.bfloat16)
        return cx, g * x

    f.defvjp(fwd, bwd)
    return f


x = jnp.ones(3, jnp.float32)
y = jnp.ones(3, jnp.float32)
for kind in ("zero", "cast g"):
    f = make(kind)
    grad = jax.grad(lambda x, y: f(x, y).sum())
    print(f"{kind}: eager grad dtype {grad(x, y).dtype}")

    def body(c):
        i, v = c
        return i + 1, grad(v, y)

    try:
        jax.lax.while_loop(lambda c: c[0] < 2, body, (0, x))
        print(f"{kind}: while_loop carrying the gradient runs")
    except TypeError as e:
        print(f"{kind}: while_loop carrying the gradient raises TypeError: {str(e).splitlines()[0]}")
