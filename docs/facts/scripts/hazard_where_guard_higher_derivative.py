"""VJP612: a custom rule that guards its slope with `where(x == c, CONST, EXPR)`, CONST being the
limit of EXPR at c (the guard only keeps a 0/0 out), is right to first order, but the constant
branch has derivative 0, so second derivatives through x == c are silently wrong
(jax-ml/jax#40627: jnp.i0's second derivative at 0; jax-ml/jax#12033: lax.pow's mixed second
derivative at y == 0). Look-alikes: an even slope (its own derivative at c is 0) and a Taylor
expansion selected by a double where."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from harness import check, header

header("where guard in a custom rule drops higher derivatives")


@jax.custom_jvp
def sinc(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 1.0, jnp.sin(safe) / safe)


@sinc.defjvp
def sinc_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    safe = jnp.where(x == 0, 1.0, x)
    slope = jnp.where(x == 0, 0.0, (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)
    return sinc(x), slope * dx


@jax.custom_jvp
def power(x, y):
    return jnp.exp(y * jnp.log(x))


@power.defjvp
def power_jvp(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    out = power(x, y)
    dfdx = lax.select(y != 0, y * jnp.exp((y - 1.0) * jnp.log(x)), 0.0)
    return out, dfdx * dx + jnp.log(x) * out * dy


@jax.custom_vjp
def log1p_ratio(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 1.0, jnp.log1p(safe) / safe)


def log1p_ratio_fwd(x):
    return log1p_ratio(x), x


def log1p_ratio_bwd(x, g):
    safe = jnp.where(x == 0, 1.0, x)
    return (jnp.where(x == 0, -0.5, (safe / (1.0 + safe) - jnp.log1p(safe)) / safe ** 2) * g,)


log1p_ratio.defvjp(log1p_ratio_fwd, log1p_ratio_bwd)


def ref_sinc(x):
    return jnp.sinc(x / jnp.pi)


X0 = jnp.float32(0.0)
print("## custom_jvp sinc, slope guarded with where(x == 0, 0.0, ...): first derivative right, second lost")
check("grad(sinc)(0)", lambda: jax.grad(sinc)(X0), jax.grad(ref_sinc)(X0))
check("grad(sinc)(0.7)", lambda: jax.grad(sinc)(0.7), jax.grad(ref_sinc)(0.7))
check("grad(grad(sinc))(0)", lambda: jax.grad(jax.grad(sinc))(X0), -1.0 / 3.0)
check("jit(grad(grad(sinc)))(0)", lambda: jax.jit(jax.grad(jax.grad(sinc)))(X0), -1.0 / 3.0)
check("hessian(sinc)(0)", lambda: jax.hessian(sinc)(X0), -1.0 / 3.0)
check("grad(grad(sinc))(0.7) (away from the guard)", lambda: jax.grad(jax.grad(sinc))(0.7),
      jax.grad(jax.grad(ref_sinc))(0.7))

print("## custom_jvp power, x-slope selected as 0 when y == 0: the mixed derivative d2/dx dy at y = 0 is lost")
check("grad wrt x at (2, 0)", lambda: jax.grad(power)(2.0, 0.0), 0.0)
check("d/dy (d/dx power) at (2, 0)", lambda: jax.grad(jax.grad(power), argnums=1)(2.0, 0.0), 0.5)
check("d/dy (d/dx power) at (2, 1.5)", lambda: jax.grad(jax.grad(power), argnums=1)(2.0, 1.5),
      2.0 ** 0.5 * (1.0 + 1.5 * jnp.log(2.0)))

print("## custom_vjp log1p(x)/x, bwd guarded with where(x == 0, -0.5, ...): reverse over reverse loses f''(0) = 2/3")
check("grad(log1p_ratio)(0)", lambda: jax.grad(log1p_ratio)(X0), -0.5)
check("grad(grad(log1p_ratio))(0)", lambda: jax.grad(jax.grad(log1p_ratio))(X0), 2.0 / 3.0)

print("## look-alikes: the slope is even (its derivative at 0 is 0), or a Taylor expansion under a double where")


@jax.custom_jvp
def versine_ratio(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 0.0, (1.0 - jnp.cos(safe)) / safe)


@versine_ratio.defjvp
def versine_ratio_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    safe = jnp.where(x == 0, 1.0, x)
    slope = jnp.where(x == 0, 0.5, (safe * jnp.sin(safe) - (1.0 - jnp.cos(safe))) / safe ** 2)
    return versine_ratio(x), slope * dx


@jax.custom_jvp
def taylor_sinc(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 1.0, jnp.sin(safe) / safe)


@taylor_sinc.defjvp
def taylor_sinc_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    small = jnp.abs(x) < 1e-3
    safe = jnp.where(small, 1.0, x)
    slope = jnp.where(small, -x / 3.0 + x ** 3 / 30.0, (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)
    return taylor_sinc(x), slope * dx


check("grad(grad(versine_ratio))(0) (even slope)", lambda: jax.grad(jax.grad(versine_ratio))(X0), 0.0)
check("grad(grad(taylor_sinc))(0) (double where)", lambda: jax.grad(jax.grad(taylor_sinc))(X0), -1.0 / 3.0)
check("hessian(taylor_sinc)(0) (double where)", lambda: jax.hessian(taylor_sinc)(X0), -1.0 / 3.0)
