"""nonlinear-jvp hazard: an eqx.filter_custom_jvp rule whose output tangent squares an input tangent.

Report: jax-ml/jax#13302 https://github.com/jax-ml/jax/issues/13302 (in the thread, the example given
for equinox.filter_custom_jvp with a keyword-only fn argument returned tx**2 + ty as the tangent,
which is not linear in the tangents: jvp gives a wrong value and reverse mode cannot transpose it).
Here a combiner applies a keyword-only callable and its rule squares the first tangent.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/h6_jax13302_filter_custom_jvp_squared_tangent", "family": "nonlinear-jvp",
    "expect": "hazard", "source": "jax-ml/jax#13302", "url": "https://github.com/jax-ml/jax/issues/13302",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@eqx.filter_custom_jvp
def combine(x, y, *, fn):
    return fn(x, y)


@combine.def_jvp
def _combine_jvp(primals, tangents, *, fn):
    x, y = primals
    tx, ty = tangents
    return combine(x, y, fn=fn), tx ** 2 + ty  # eval: span


def _add(a, b):
    return a + b


def eval_fn(x, y):
    return jnp.sum(combine(x, y, fn=_add))


def eval_inputs():
    return (np.array([1.0, -2.0], np.float32), np.array([0.5, 3.0], np.float32))


def eval_reference(x, y):
    return np.asarray(np.sum(np.asarray(x, np.float64) + np.asarray(y, np.float64)))
