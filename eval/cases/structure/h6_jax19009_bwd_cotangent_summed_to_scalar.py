"""structure hazard: a custom_vjp bwd reduces the cotangent of a vector input to a scalar.

Report: jax-ml/jax#19009 https://github.com/jax-ml/jax/pull/19009 (custom_vjp had no check that a bwd
rule's cotangents have the shapes of the primal inputs; a bwd that returned the wrong shape failed
deep inside the backward pass, or with UnshapedArray errors; the PR added the shape check). Here a
per-element scaling rule sums its cotangent over the elements for the vector input.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h6_jax19009_bwd_cotangent_summed_to_scalar", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#19009", "url": "https://github.com/jax-ml/jax/pull/19009",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def softsign(v):
    return v / (1.0 + jnp.abs(v))


def _softsign_fwd(v):
    return softsign(v), v


def _softsign_bwd(v, g):
    d = 1.0 / (1.0 + jnp.abs(v)) ** 2
    return (jnp.sum(d * g),)  # eval: span


softsign.defvjp(_softsign_fwd, _softsign_bwd)


def eval_fn(v):
    return jnp.sum(softsign(v) ** 2)


def eval_inputs():
    return (np.array([0.4, -1.3, 2.2, 0.05], np.float32),)


def eval_reference(v):
    v = np.asarray(v, np.float64)
    return np.asarray(np.sum((v / (1.0 + np.abs(v))) ** 2))
