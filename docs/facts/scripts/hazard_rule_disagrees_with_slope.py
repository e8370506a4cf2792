"""VJP610: a custom rule whose derivative for one argument is off (a sign slip, a dropped factor)
while the other argument's is right (jax-ml/jax#13048, jax-ml/jax#3213): JAX never compares a
rule with its primal, so every transformation returns the wrong derivative, with no error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.test_util import check_grads

from harness import check, header

header("custom rule whose derivative for one argument disagrees with the primal")


@jax.custom_vjp
def modulated(phase, gain):
    return jnp.cos(phase) * gain


def modulated_fwd(phase, gain):
    return modulated(phase, gain), (phase, gain)


def modulated_bwd(res, g):
    phase, gain = res
    return (-jnp.sin(phase) * gain * g, -jnp.cos(phase) * g)  # the gain's sign slipped


modulated.defvjp(modulated_fwd, modulated_bwd)


@jax.custom_jvp
def damped(t, amp):
    return jnp.exp(-t) * amp


@damped.defjvp
def damped_jvp(primals, tangents):
    (t, amp), (t_dot, amp_dot) = primals, tangents
    decay = jnp.exp(-t)
    return decay * amp, -decay * amp * t_dot - decay * amp_dot  # the amplitude's term negated


def ref_modulated(phase, gain):
    return jnp.cos(phase) * gain


def ref_damped(t, amp):
    return jnp.exp(-t) * amp


P, G = jnp.array([0.3, 1.1, -0.7]), jnp.array([2.0, 0.5, 1.5])
loss = lambda f: (lambda a, b: jnp.sum(f(a, b)))  # noqa: E731

print("## custom_vjp: the gain's cotangent has the wrong sign; the phase's is right")
check("grad wrt phase (right formula)", lambda: jax.grad(loss(modulated))(P, G), jax.grad(loss(ref_modulated))(P, G))
check("grad wrt gain", lambda: jax.grad(loss(modulated), argnums=1)(P, G),
      jax.grad(loss(ref_modulated), argnums=1)(P, G))
check("jit(grad) wrt gain", lambda: jax.jit(jax.grad(loss(modulated), argnums=1))(P, G),
      jax.grad(loss(ref_modulated), argnums=1)(P, G))
check("vmap(grad) wrt gain", lambda: jax.vmap(jax.grad(modulated, argnums=1))(P, G),
      jax.vmap(jax.grad(ref_modulated, argnums=1))(P, G))
check("check_grads(order=1, modes=['rev'])", lambda: check_grads(modulated, (P, G), order=1, modes=["rev"]))

print("## custom_jvp: the amplitude's tangent term is negated; the time's is right")
check("grad wrt t (right formula)", lambda: jax.grad(loss(damped))(P, G), jax.grad(loss(ref_damped))(P, G))
check("grad wrt amp", lambda: jax.grad(loss(damped), argnums=1)(P, G), jax.grad(loss(ref_damped), argnums=1)(P, G))
check("jacfwd wrt amp", lambda: jax.jacfwd(damped, argnums=1)(P, G), jax.jacfwd(ref_damped, argnums=1)(P, G))
check("jvp, tangent on amp", lambda: jax.jvp(damped, (P, G), (jnp.zeros(3), jnp.ones(3)))[1],
      jax.jvp(ref_damped, (P, G), (jnp.zeros(3), jnp.ones(3)))[1])
check("check_grads(order=1, modes=['fwd'])", lambda: check_grads(damped, (P, G), order=1, modes=["fwd"]))

print("## look-alike: a gradient reversal (every argument off on purpose) runs and is 'wrong' by design")


@jax.custom_vjp
def reverse(x):
    return x


reverse.defvjp(lambda x: (x, None), lambda _, g: (-g,))
check("grad of a gradient reversal", lambda: jax.grad(reverse)(1.0), jax.grad(lambda x: x)(1.0))
