"""jvp-primal look-alike: the same rule with the primal output taken from the primals only.

Report: jax-ml/jax#7972 https://github.com/jax-ml/jax/issues/7972 (the reporter's working
variant: return the primals as they are, and the tangents as the tangent output).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "jvp-primal/ok_jax7972_primal_from_primals", "family": "jvp-primal", "expect": "ok",
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
    return passthrough(primals[0]), joined[n:]


def eval_fn(state):
    return jnp.sum(passthrough(state) ** 2)


def eval_inputs():
    return (np.array([1.0, -2.0, 0.5], np.float32),)


def eval_reference(state):
    return np.sum(np.asarray(state, np.float64) ** 2)
