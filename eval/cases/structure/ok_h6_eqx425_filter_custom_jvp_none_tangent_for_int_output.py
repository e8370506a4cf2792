"""structure look-alike: an eqx.filter_custom_jvp returns None as the tangent of its integer output.

Report: patrick-kidger/equinox#425 https://github.com/patrick-kidger/equinox/pull/425 (fixed
filter_custom_jvp when a rule returns symbolic-zero tangents, None, for integer-valued outputs).
Here a rounding-aware scaler returns a float value and an integer count, with None for the count's
tangent.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h6_eqx425_filter_custom_jvp_none_tangent_for_int_output", "family": "structure",
    "expect": "ok", "source": "patrick-kidger/equinox#425",
    "url": "https://github.com/patrick-kidger/equinox/pull/425",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


@eqx.filter_custom_jvp
def scale_and_count(x):
    return 2.0 * x, jnp.sum(x > 0).astype(jnp.int32)


@scale_and_count.def_jvp
def _scale_and_count_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    return scale_and_count(x), (2.0 * tx, None)  # eval: span


def eval_fn(x):
    y, n = scale_and_count(x)
    return jnp.sum(y * y) + 0.0 * n


def eval_inputs():
    return (np.array([0.5, -1.0, 1.5], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum((2.0 * np.asarray(x, np.float64)) ** 2))
