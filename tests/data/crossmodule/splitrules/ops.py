"""Custom derivatives whose rules live in splitrules/_rules.py, imported by name or through the
module."""
import jax
import jax.numpy as jnp

from . import _rules as R
from ._rules import host_exp_bwd, host_exp_fwd, smooth_abs_jvp, softsign_jvp


@jax.custom_jvp
def softsign(x):
    return x / (1.0 + jnp.abs(x))


softsign.defjvp(softsign_jvp)


@jax.custom_jvp
def smooth_abs(x):
    return jnp.sqrt(x**2 + 1.0)


smooth_abs.defjvp(smooth_abs_jvp)


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


softplus.defjvp(R.softplus_jvp)


@jax.custom_vjp
def host_exp(x):
    return jnp.exp(x)


host_exp.defvjp(host_exp_fwd, host_exp_bwd)


@jax.custom_vjp
def clip(x):
    return jnp.clip(x, 0.0, 1.0)


clip.defvjp(R.clip_fwd, R.clip_bwd)


@jax.custom_vjp
def shift(x, s):
    return x + s


shift.defvjp(R.shift_fwd, R.shift_bwd)


@jax.custom_jvp
def soft_clip(x):
    return jnp.tanh(x)


soft_clip.defjvp(R.soft_clip_jvp)


@jax.custom_jvp
def sigmoid(x):
    return 1.0 / (1.0 + jnp.exp(-x))


sigmoid.defjvps(R.sigmoid_dx)
