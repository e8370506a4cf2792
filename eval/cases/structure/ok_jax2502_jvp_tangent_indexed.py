"""structure look-alike (custom_jvp): the tangent is indexed like the primal, so the shapes agree.

Report: jax-ml/jax#2502 https://github.com/jax-ml/jax/issues/2502 (the corrected rule: the
tangent of `logaddexp(q[0], 0)` is `sigmoid(q[0]) * q_dot[0]`).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax2502_jvp_tangent_indexed", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#2502", "url": "https://github.com/jax-ml/jax/issues/2502",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def log_normaliser(q):
    return jnp.logaddexp(q[0], 0.0)


@log_normaliser.defjvp
def log_normaliser_jvp(primals, tangents):
    (q,), (q_dot,) = primals, tangents
    return log_normaliser(q), jax.nn.sigmoid(q[0]) * q_dot[0]


def eval_fn(q):
    return log_normaliser(q)


def eval_inputs():
    return (np.array([0.3], np.float32),)


def eval_reference(q):
    return np.logaddexp(np.float64(q[0]), 0.0)
