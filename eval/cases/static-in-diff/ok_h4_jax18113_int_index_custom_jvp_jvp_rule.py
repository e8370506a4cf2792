"""static-in-diff look-alike: a pass-through custom_jvp over x[idx] with an integer index array, its rule delegating to jax.jvp.

Report: jax-ml/jax#18113 https://github.com/jax-ml/jax/issues/18113 (a no-op custom_jvp whose rule
is jax.jvp(_f, primals, tangents) raised a TypeError under vjp when one primal was an integer
index array; the integer's tangent type did not match). On JAX 0.10.2 the integer slot gets a float0
tangent and the rule runs. Here a gather of selected features is wrapped the same way.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_h4_jax18113_int_index_custom_jvp_jvp_rule", "family": "static-in-diff",
    "expect": "ok", "source": "jax-ml/jax#18113", "url": "https://github.com/jax-ml/jax/issues/18113",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


def _gather(x, idx):
    return x[idx]


@jax.custom_jvp
def gather(x, idx):  # eval: span
    return _gather(x, idx)


@gather.defjvp
def _gather_jvp(primals, tangents):
    return jax.jvp(_gather, primals, tangents)  # eval: span


def eval_fn(x, idx):
    return jnp.sum(gather(x, idx) ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0, 3.0, -0.5], np.float32), np.array([1, 3, 3], np.int32))


def eval_reference(x, idx):
    return np.asarray(np.sum(np.asarray(x, np.float64)[np.asarray(idx)] ** 2))
