"""VJP343: the registration of the other kind of custom derivative (`defjvp` on a custom_vjp,
`defvjp` on a custom_jvp) raises where it runs, before any differentiation."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("defjvp on a custom_vjp, defvjp on a custom_jvp")


def jvp_on_vjp():
    @jax.custom_vjp
    def f(x):
        return jnp.tanh(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.tanh(x), (1 - jnp.tanh(x) ** 2) * t

    return f


def vjp_on_jvp():
    g = jax.custom_jvp(lambda x: jnp.tanh(x))
    g.defvjp(lambda x: (jnp.tanh(x), x), lambda x, ct: ((1 - jnp.tanh(x) ** 2) * ct,))
    return g


def defjvps_on_vjp():
    h = jax.custom_vjp(jnp.sin)
    h.defjvps(lambda t, ans, x: jnp.cos(x) * t)
    return h


check("@f.defjvp on a custom_vjp (at definition)", jvp_on_vjp)
check("g.defvjp(...) on a custom_jvp (at definition)", vjp_on_jvp)
check("h.defjvps(...) on a custom_vjp (at definition)", defjvps_on_vjp)
