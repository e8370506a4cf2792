"""VJP331: a custom_jvp with a real output (a real part, an absolute value) whose rule returns a
complex tangent (jax-ml/jax#2488): eager calls work; grad, jvp and jit(grad) raise TypeError."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("custom_jvp: complex tangent for a real output")


@jax.custom_jvp
def power(z):
    return jnp.sum(jnp.real(z * jnp.conj(z)))


@power.defjvp
def power_jvp(primals, tangents):
    (z,), (z_dot,) = primals, tangents
    return power(z), jnp.sum(2.0 * jnp.conj(z) * z_dot)


@jax.custom_jvp
def power_fixed(z):
    return jnp.sum(jnp.real(z * jnp.conj(z)))


@power_fixed.defjvp
def power_fixed_jvp(primals, tangents):
    (z,), (z_dot,) = primals, tangents
    return power_fixed(z), jnp.sum(2.0 * jnp.real(jnp.conj(z) * z_dot))


RE, IM = jnp.array([1.0, 2.0, -0.5]), jnp.array([0.5, -1.0, 0.25])
ref = lambda re, im: jnp.sum(re ** 2 + im ** 2)  # noqa: E731

print("## complex tangent `2 conj(z) dz` for the real |z|^2")
check("eager call", lambda: power(RE + 1j * IM), ref(RE, IM))
check("grad through re + 1j * im", lambda: jax.grad(lambda a, b: power(a + 1j * b))(RE, IM), jax.grad(ref)(RE, IM))
check("jit(grad)", lambda: jax.jit(jax.grad(lambda a, b: power(a + 1j * b)))(RE, IM), jax.grad(ref)(RE, IM))
check("jvp with a complex tangent", lambda: jax.jvp(power, (RE + 1j * IM,), (jnp.ones(3, jnp.complex64),))[1],
      2.0 * jnp.sum(RE))
check("real input (no complex data): grad", lambda: jax.grad(power)(RE), jax.grad(lambda a: jnp.sum(a ** 2))(RE))

print("## the real part taken: right")
check("grad through re + 1j * im", lambda: jax.grad(lambda a, b: power_fixed(a + 1j * b))(RE, IM),
      jax.grad(ref)(RE, IM))
check("jvp with a complex tangent", lambda: jax.jvp(power_fixed, (RE + 1j * IM,), (jnp.ones(3, jnp.complex64),))[1],
      2.0 * jnp.sum(RE))
