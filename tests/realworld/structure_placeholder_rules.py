"""Tests that only trace the primal register stub rules that must never run (`assert False`,
`...`). Their arity or returns say nothing about the author's intent."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def pick(flag, x):
    return jnp.where(flag, x, 0.0)


def pick_fwd(flag, x):
    assert False, "never differentiated in this test"


def pick_bwd(residuals, flag, x):
    raise AssertionError("unreachable")


pick.defvjp(pick_fwd, pick_bwd)


@jax.custom_vjp
def passthrough(ref):
    return ref


passthrough.defvjp(lambda ref: ..., lambda *_: ...)


def traced_only():
    return jax.make_jaxpr(pick)(True, 1.0), jax.make_jaxpr(passthrough)(2.0)
