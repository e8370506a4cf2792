"""structure hazard: a custom_jvp function with a keyword-only flag listed in nondiff_argnames, called by keyword.

Report: jax-ml/jax#13302 https://github.com/jax-ml/jax/issues/13302 (a user wanted keyword-only
parameters on custom_jvp functions, writing @partial(custom_jvp, nondiff_argnames=(...)) over
def f(z, *, flag=False); custom_jvp binds every argument positionally, so the call fails). Here
a straight-through rounding takes a keyword-only switch for its backward behaviour.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h4_jax13302_keyword_only_nondiff_argnames", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#13302", "url": "https://github.com/jax-ml/jax/issues/13302",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


@partial(jax.custom_jvp, nondiff_argnames=("straight_through",))  # eval: span
def soft_round(z, *, straight_through=True):  # eval: span
    return z + 0.25 * jnp.sin(z)


@soft_round.defjvp
def _soft_round_jvp(straight_through, primals, tangents):
    (z,), (z_dot,) = primals, tangents
    out = soft_round(z, straight_through=straight_through)
    scale = 1.0 if straight_through else 1.0 + 0.25 * jnp.cos(z)
    return out, scale * z_dot


def eval_fn(z):
    return jnp.sum(soft_round(z, straight_through=False))  # eval: span


def eval_inputs():
    return (np.array([0.3, -1.2, 2.0], np.float32),)


def eval_reference(z):
    z = np.asarray(z, np.float64)
    return np.asarray(np.sum(z + 0.25 * np.sin(z)))
