"""closure hazard (VJP202): a memory-saving invertible layer keeps no residuals; its fwd stashes the output on an outer object and bwd reads it back to rebuild the input.

Report: jax-ml/jax#2887 https://github.com/jax-ml/jax/issues/2887 ("Carry arguments through backward
pass of custom_vjp": for low-memory gradients of invertible networks the reporter wanted bwd to
reconstruct inputs from outputs instead of saving residuals; the maintainer saw no clean way in the
API). Stashing the output in Python state outside the rules is the shortcut users take: it stores
a tracer whenever fwd is traced (`jax.grad(jax.jit(f))`) and bwd then reads a stale one.
"""
import types

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jax2887_fwd_stashes_output_for_bwd", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#2887", "url": "https://github.com/jax-ml/jax/issues/2887",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"],
}
stash = types.SimpleNamespace(out=None)


@jax.custom_vjp  # eval: span
def leaky_shift(x):  # eval: span
    return x + 0.5 * jnp.tanh(x)


def leaky_shift_fwd(x):
    y = leaky_shift(x)
    stash.out = y  # eval: span
    return y, None


def _invert(y):
    x = y
    for _ in range(30):  # fixed point of x = y - 0.5 tanh(x)
        x = y - 0.5 * jnp.tanh(x)
    return x


def leaky_shift_bwd(_, g):
    x = _invert(stash.out)  # eval: span
    return ((1.0 + 0.5 * (1.0 - jnp.tanh(x) ** 2)) * g,)


leaky_shift.defvjp(leaky_shift_fwd, leaky_shift_bwd)


def eval_fn(x):
    return leaky_shift(x)


def eval_inputs():
    return (np.array([-0.7, 0.1, 1.4], np.float32),)


def eval_reference(x):
    v = np.asarray(x, np.float64)
    return v + 0.5 * np.tanh(v)
