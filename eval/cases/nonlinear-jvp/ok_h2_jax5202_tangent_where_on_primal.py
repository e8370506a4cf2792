"""nonlinear-jvp look-alike: the multiply-no-nan tangent selects on the primal weight only.

Report: jax-ml/jax#5202 https://github.com/jax-ml/jax/issues/5202 (the failing rule re-entered the
custom_jvp with tangents). Writing the tangent with jnp.where whose condition and untaken branch do
not involve tangents keeps it linear in (dx, dw), and grad transposes it.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_h2_jax5202_tangent_where_on_primal", "family": "nonlinear-jvp",
    "expect": "ok", "source": "jax-ml/jax#5202", "url": "https://github.com/jax-ml/jax/issues/5202",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp
def weight_no_nan(x, w):
    return jnp.where(w == 0.0, 0.0, x * w)


@weight_no_nan.defjvp
def _weight_no_nan_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    keep = (w != 0.0).astype(x.dtype)
    return weight_no_nan(x, w), keep * (dx * w + x * dw)  # eval: span


def eval_fn(x, w):
    return weight_no_nan(x, w) ** 2


def eval_inputs():
    return (np.array([2.0, -1.0, 0.5], np.float32), np.array([3.0, 0.0, -2.0], np.float32))


def eval_reference(x, w):
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    return np.where(w == 0.0, 0.0, x * w) ** 2
