"""nondiff-array hazard: a custom_jvp smoothing op takes its PRNG key in `nondiff_argnums`, keys vmapped.

Report: jax-ml/jax#29342 https://github.com/jax-ml/jax/issues/29342 (a perturbed-optimizer
helper built a custom_jvp whose nondiff argument ended up a tracer; reverse mode through it failed
with "Zero ... is not a valid JAX type", and the maintainer's answer was that `nondiff_argnums`
must never receive a tracer). Here a Gaussian-smoothed step function marks its key nondiff; the
loss splits keys and vmaps over them, so each key is a batch tracer in the nondiff slot. Written
as a hazard; JAX 0.10.2 runs every check correctly (a batch tracer in a nondiff slot under an
outside `grad` is handled), so it is a look-alike by label.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ho_jax29342_noise_key_nondiff_vmap", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#29342", "url": "https://github.com/jax-ml/jax/issues/29342",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "static": (1,), "heldout": True,
}
SIGMA = 0.5
SAMPLES = 64


@partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def smooth_step(x, key):  # eval: span
    z = jax.random.normal(key, (SAMPLES,) + jnp.shape(x))
    return jnp.mean(jnp.heaviside(x + SIGMA * z, 0.5), axis=0)


@smooth_step.defjvp
def smooth_step_jvp(key, primals, tangents):
    (x,), (dx,) = primals, tangents
    z = jax.random.normal(key, (SAMPLES,) + jnp.shape(x))
    slope = jnp.mean(jnp.heaviside(x + SIGMA * z, 0.5) * z, axis=0) / SIGMA
    return smooth_step(x, key), slope * dx


def eval_fn(x, seed):
    keys = jax.random.split(jax.random.PRNGKey(seed), 4)
    per_key = jax.vmap(lambda k: smooth_step(x, k))(keys)  # eval: span
    return jnp.mean(per_key, axis=0)


def eval_inputs():
    return (np.array([0.1, -0.3], np.float32), 3)


def _samples(seed):
    keys = jax.random.split(jax.random.PRNGKey(seed), 4)
    return [np.asarray(jax.random.normal(k, (SAMPLES, 2)), np.float64) for k in keys]


def eval_reference(x, seed):
    x = np.asarray(x, np.float64)
    return np.mean([np.mean(np.heaviside(x + SIGMA * z, 0.5), axis=0) for z in _samples(seed)], axis=0)


def eval_grad_reference(x, seed):
    x = np.asarray(x, np.float64)
    return (np.mean([np.mean(np.heaviside(x + SIGMA * z, 0.5) * z, axis=0) / SIGMA
                     for z in _samples(seed)], axis=0),)
