"""structure hazard: a custom_jvp rule whose tangent sums away the batch axis of a batched input.

Report: jax-ml/jax#6121 https://github.com/jax-ml/jax/issues/6121 (`grad` of `det` on a stack
of 1x1 matrices raised "Custom JVP rule must produce primal and tangent outputs with equal shapes
and dtypes, but got float32[1] and float32[16]"). Paraphrased as a user's own rule: the log-volume of
a batch of diagonal matrices, whose tangent is written for one matrix (`jnp.sum` over everything),
so for a stack its shape is () while the primal output is one value per matrix.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ho_jax6121_tangent_collapses_batch", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#6121", "url": "https://github.com/jax-ml/jax/issues/6121",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


@jax.custom_jvp  # eval: span
def logvol(d):  # eval: span
    return jnp.sum(jnp.log(d), axis=-1)


@logvol.defjvp
def logvol_jvp(primals, tangents):
    (d,), (dd,) = primals, tangents
    return logvol(d), jnp.sum(dd / d)  # eval: span


def eval_fn(d):
    return logvol(d)


def eval_inputs():
    return (np.array([[1.5, 2.0], [0.5, 3.0], [1.2, 0.9]], np.float32),)


def eval_reference(d):
    return np.sum(np.log(np.asarray(d, np.float64)), axis=-1)
