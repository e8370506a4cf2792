"""structure hazard: a custom_jvp function with a keyword-only parameter, called with that keyword.

Report: jax-ml/jax#13302 https://github.com/jax-ml/jax/issues/13302 (a user wanted keyword-only
parameters on a custom_jvp function; custom_jvp resolves every argument to a position and cannot
bind a keyword-only one, so the call fails before any rule runs). Here a leaky ramp takes its slope
as a keyword-only argument.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h6_jax13302_custom_jvp_keyword_only_argument", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#13302", "url": "https://github.com/jax-ml/jax/issues/13302",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@jax.custom_jvp  # eval: span
def leaky(z, *, slope=0.1):  # eval: span
    return jnp.where(z > 0, z, slope * z)


@leaky.defjvp
def _leaky_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    return leaky(z), jnp.where(z > 0, 1.0, 0.1) * dz


def eval_fn(z):
    return jnp.sum(leaky(z, slope=0.2))  # eval: span


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0, -0.3], np.float32),)


def eval_reference(z):
    z = np.asarray(z, np.float64)
    return np.asarray(np.sum(np.where(z > 0, z, 0.2 * z)))
