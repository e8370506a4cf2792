"""jvp-primal hazard: a custom_jvp rule computes its primal output from the tangents.

Report: jax-ml/jax#7972 https://github.com/jax-ml/jax/issues/7972 ("Unexpected error related to
jax.custom_jvp"): an identity function's jvp rule concatenated primals and tangents and sliced
both outputs out of the result; jax.jacfwd raised a vmap out_axes error ("when the primal
computation depends on the tangents").
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "jvp-primal/jax7972_primal_from_tangents", "family": "jvp-primal", "expect": "hazard",
    "source": "jax-ml/jax#7972", "url": "https://github.com/jax-ml/jax/issues/7972",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["jvp", "jacfwd"],
}


@jax.custom_jvp
def passthrough(state):
    return state * 1.0


@passthrough.defjvp
def passthrough_jvp(primals, tangents):
    joined = jnp.concatenate((primals[0], tangents[0]))
    n = primals[0].shape[0]
    return joined[:n], joined[n:]  # eval: span


def eval_fn(state):
    return jnp.sum(passthrough(state) ** 2)


def eval_inputs():
    return (np.array([1.0, -2.0, 0.5], np.float32),)


def eval_reference(state):
    return np.sum(np.asarray(state, np.float64) ** 2)
