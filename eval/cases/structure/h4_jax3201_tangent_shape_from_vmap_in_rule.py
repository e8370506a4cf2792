"""structure hazard: a custom_jvp whose rule builds the tangent with vmap and returns it without the primal's trailing axis.

Report: jax-ml/jax#3201 https://github.com/jax-ml/jax/issues/3201 (a custom_jvp returning a
(rows, 1) column computed its tangent by vmapping a per-entry helper inside the jvp rule; the rule
ran to the end but JAX then raised a shape error). Here a row-normalised column keeps the same
shape mismatch between primal (rows, 1) and tangent (rows,).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h4_jax3201_tangent_shape_from_vmap_in_rule", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#3201", "url": "https://github.com/jax-ml/jax/issues/3201",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


@jax.custom_jvp  # eval: span
def row_energy(mat):  # eval: span
    return jnp.sum(mat ** 2, axis=1, keepdims=True)


@row_energy.defjvp
def _row_energy_jvp(primals, tangents):
    (mat,), (mat_dot,) = primals, tangents
    out = row_energy(mat)
    per_row = jax.vmap(lambda r, rd: 2.0 * jnp.dot(r, rd))(mat, mat_dot)
    return out, per_row  # eval: span


def eval_fn(mat):
    return jnp.sum(jnp.sqrt(row_energy(mat)))


def eval_inputs():
    return (np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0]], np.float32),)


def eval_reference(mat):
    m = np.asarray(mat, np.float64)
    return np.asarray(np.sum(np.sqrt(np.sum(m ** 2, axis=1))))
