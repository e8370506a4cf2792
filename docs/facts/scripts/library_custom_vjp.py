"""Library functions that are custom_vjp functions: forward mode through them (VJP315).

`jax.experimental.ode.odeint` closure-converts its dynamics and calls `_odeint`, a custom_vjp
whose fwd and bwd call it again: forward mode raises wherever a tangent reaches `y0`, `t`, the
extra `*args` or a value the dynamics close over; reverse mode works."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental.ode import odeint

from harness import check, header

header("forward mode through jax.experimental.ode.odeint")
T = jnp.linspace(0.0, 1.0, 5)


def closed(k):
    return odeint(lambda y, t: k * y, jnp.float32(1.0), T).sum()


def as_arg(k):
    return odeint(lambda y, t, kk: kk * y, jnp.float32(1.0), T, k).sum()


def through_y0(y0):
    return odeint(lambda y, t: -0.5 * y, y0, T).sum()


def fixed(k):  # the tangent never reaches odeint: it only scales the result
    return k * odeint(lambda y, t: -0.5 * y, jnp.float32(1.0), T).sum()


def stopped(k):
    ks = jax.lax.stop_gradient(k)
    return k * odeint(lambda y, t: ks * y, jnp.float32(1.0), T).sum()


K = jnp.float32(0.8)
for name, fn in [("closure over k", closed), ("k as *args", as_arg), ("y0", through_y0),
                 ("k outside odeint", fixed), ("k stop_gradient-ed inside", stopped)]:
    check(f"{name}: jacfwd", lambda: jax.jacfwd(fn)(K))
    check(f"{name}: jvp", lambda: jax.jvp(fn, (K,), (jnp.float32(1.0),)))
    check(f"{name}: hessian", lambda: jax.hessian(fn)(K))
    check(f"{name}: jacfwd(jacrev)", lambda: jax.jacfwd(jax.jacrev(fn))(K))
    check(f"{name}: jacrev", lambda: jax.jacrev(fn)(K))
    check(f"{name}: jacrev(jacrev)", lambda: jax.jacrev(jax.jacrev(fn))(K))
