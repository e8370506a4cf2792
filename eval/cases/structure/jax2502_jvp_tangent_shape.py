"""structure hazard (custom_jvp): the rule's tangent has a different shape from its primal output.

Report: jax-ml/jax#2502 https://github.com/jax-ml/jax/issues/2502 ("Spurious Exception: Tracer
can't be used with raw numpy functions?"; the maintainer: "It's actually a shape error"). The
primal reduces `q[0]` to a scalar while the tangent keeps the shape of `q`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax2502_jvp_tangent_shape", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#2502", "url": "https://github.com/jax-ml/jax/issues/2502",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def log_normaliser(q):
    return jnp.logaddexp(q[0], 0.0)


@log_normaliser.defjvp
def log_normaliser_jvp(primals, tangents):
    (q,), (q_dot,) = primals, tangents
    return log_normaliser(q), jax.nn.sigmoid(q) * q_dot  # eval: span


def eval_fn(q):
    return log_normaliser(q)


def eval_inputs():
    return (np.array([0.3], np.float32),)


def eval_reference(q):
    return np.logaddexp(np.float64(q[0]), 0.0)
