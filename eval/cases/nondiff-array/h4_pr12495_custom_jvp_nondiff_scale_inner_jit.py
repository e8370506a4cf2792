"""nondiff-array hazard: a custom_jvp marks an array-valued scale nondiff; the model is jitted and grad is taken outside.

Report: jax-ml/jax#12495 https://github.com/jax-ml/jax/pull/12495 ("improve custom_jvp
nondiff_argnums tracer error": a tracer passed in a custom_jvp nondiff_argnums slot leaks out of a
staged-out trace and surfaces as an unrelated lowering error). Here a gain-scaled tanh takes its
per-unit gain through nondiff_argnums inside a jax.jit model that grad differentiates.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/h4_pr12495_custom_jvp_nondiff_scale_inner_jit", "family": "nondiff-array",
    "expect": "hazard", "source": "jax-ml/jax#12495", "url": "https://github.com/jax-ml/jax/pull/12495",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


@partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def gained_tanh(x, gain):  # eval: span
    return jnp.tanh(x) * gain


@gained_tanh.defjvp
def _gained_tanh_jvp(gain, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    t = jnp.tanh(x)
    return t * gain, (1.0 - t ** 2) * gain * x_dot


@jax.jit
def model(x, gain):
    return jnp.sum(gained_tanh(x, gain))  # eval: span


def eval_fn(x, gain):
    return model(x, gain)


def eval_inputs():
    return (np.array([0.3, -0.7, 1.2], np.float32), np.array([1.0, 2.0, 0.5], np.float32))


def eval_reference(x, gain):
    return np.asarray(np.sum(np.tanh(np.asarray(x, np.float64)) * np.asarray(gain, np.float64)))
