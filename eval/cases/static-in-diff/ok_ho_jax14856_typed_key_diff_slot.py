"""static-in-diff look-alike: a typed PRNG key in a differentiable slot of a custom_vjp, bwd gives None.

Report: jax-ml/jax#14856 https://github.com/jax-ml/jax/issues/14856 (VJPs of functions involving
typed key arrays raised a bad error; fixed). A new-style key (`jax.random.key`) is a JAX array
with a float0 tangent type, so passing it positionally is fine: JAX never asks for its cotangent,
and bwd returns None in its place. Dropout written this way is a common library pattern.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_ho_jax14856_typed_key_diff_slot", "family": "static-in-diff", "expect": "ok",
    "source": "jax-ml/jax#14856", "url": "https://github.com/jax-ml/jax/issues/14856",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "static": (1,), "heldout": True,
}
RATE = 0.5


@jax.custom_vjp
def dropout(x, key):
    keep = jax.random.bernoulli(key, 1.0 - RATE, jnp.shape(x))
    return jnp.where(keep, x / (1.0 - RATE), 0.0)


def dropout_fwd(x, key):
    keep = jax.random.bernoulli(key, 1.0 - RATE, jnp.shape(x))
    return jnp.where(keep, x / (1.0 - RATE), 0.0), keep


def dropout_bwd(keep, g):
    return jnp.where(keep, g / (1.0 - RATE), 0.0), None


dropout.defvjp(dropout_fwd, dropout_bwd)


def eval_fn(x, seed):
    return dropout(x, jax.random.key(seed))


def eval_inputs():
    return (np.array([0.4, -1.0, 2.5, 0.7, -0.2, 1.1], np.float32), 7)


def _keep(x, seed):
    return np.asarray(jax.random.bernoulli(jax.random.key(seed), 1.0 - RATE, np.shape(x)))


def eval_reference(x, seed):
    return np.where(_keep(x, seed), np.asarray(x, np.float64) / (1.0 - RATE), 0.0)


def eval_grad_reference(x, seed):
    return (np.where(_keep(x, seed), 1.0 / (1.0 - RATE), 0.0),)
