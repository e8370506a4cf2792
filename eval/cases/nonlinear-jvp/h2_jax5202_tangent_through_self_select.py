"""nonlinear-jvp hazard: a multiply-no-nan custom_jvp builds its tangent by calling itself on the tangents.

Report: jax-ml/jax#5202 https://github.com/jax-ml/jax/issues/5202 ("custom_jvp transpose rule can
fail": a select-based multiply whose jvp rule applies the function to (dx, y) and (x, dy); forward
mode works, but grad must transpose a custom_jvp call whose body selects on a value that is itself
being transposed, and fails with an AssertionError). Here a masked weighting used in a loss.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/h2_jax5202_tangent_through_self_select", "family": "nonlinear-jvp",
    "expect": "hazard", "source": "jax-ml/jax#5202", "url": "https://github.com/jax-ml/jax/issues/5202",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def weight_no_nan(x, w):  # eval: span
    return jax.lax.select(jnp.equal(w, 0.0), jnp.zeros_like(x), x * w)


@weight_no_nan.defjvp
def _weight_no_nan_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    return weight_no_nan(x, w), weight_no_nan(dx, w) + weight_no_nan(x, dw)  # eval: span


def eval_fn(x, w):
    return weight_no_nan(x, w) ** 2


def eval_inputs():
    return (np.array([2.0, -1.0, 0.5], np.float32), np.array([3.0, 0.0, -2.0], np.float32))


def eval_reference(x, w):
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    return np.where(w == 0.0, 0.0, x * w) ** 2
