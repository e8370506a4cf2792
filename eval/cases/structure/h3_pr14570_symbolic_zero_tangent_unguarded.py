"""structure hazard: a custom_jvp rule with symbolic_zeros=True does arithmetic on a tangent that may be a SymbolicZero.

Report: jax-ml/jax#14570 https://github.com/jax-ml/jax/pull/14570 (adds symbolic_zeros to
custom_jvp.defjvp: tangents of inputs that are not differentiated arrive as SymbolicZero objects,
and the rule has to special-case them; the follow-up jax-ml/jax#14833 shows the guarded form).
Here a product rule opts in to symbolic zeros but multiplies both tangents unconditionally, and the
caller differentiates only the first argument.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h3_pr14570_symbolic_zero_tangent_unguarded", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#14570", "url": "https://github.com/jax-ml/jax/pull/14570",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_jvp
def gated(x, gate):
    return x * jax.nn.sigmoid(gate)


@partial(gated.defjvp, symbolic_zeros=True)  # eval: span
def _gated_jvp(primals, tangents):
    x, gate = primals
    tx, tgate = tangents
    s = jax.nn.sigmoid(gate)
    return gated(x, gate), tx * s + x * s * (1.0 - s) * tgate  # eval: span


def eval_fn(x, gate):
    return jnp.sum(gated(x, gate))


def eval_inputs():
    return (np.array([1.0, -0.5, 2.0], np.float32), np.array([0.0, 1.0, -1.0], np.float32))


def eval_reference(x, gate):
    g = np.asarray(gate, np.float64)
    return np.asarray(np.sum(np.asarray(x, np.float64) / (1.0 + np.exp(-g))))
