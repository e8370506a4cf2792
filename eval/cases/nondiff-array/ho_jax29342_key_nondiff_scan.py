"""nondiff-array hazard: a custom_jvp's nondiff PRNG key comes from the `xs` of a `lax.scan`.

Report: jax-ml/jax#29342 https://github.com/jax-ml/jax/issues/29342 (a perturbation helper's
custom_jvp received a tracer in `nondiff_argnums`; the maintainer: that slot is for values that
are never traced). Here a Monte Carlo estimate loops over pre-split keys with `lax.scan`, so each
key reaching the nondiff slot is a tracer of the scan body, and `grad` differentiates the staged loop.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ho_jax29342_key_nondiff_scan", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#29342", "url": "https://github.com/jax-ml/jax/issues/29342",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "static": (1,), "heldout": True,
}
SIGMA = 0.3


@partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def noisy_square(x, key):  # eval: span
    z = jax.random.normal(key, jnp.shape(x))
    return (x + SIGMA * z) ** 2


@noisy_square.defjvp
def noisy_square_jvp(key, primals, tangents):
    (x,), (dx,) = primals, tangents
    z = jax.random.normal(key, jnp.shape(x))
    return noisy_square(x, key), 2.0 * (x + SIGMA * z) * dx


def eval_fn(x, seed):
    keys = jax.random.split(jax.random.PRNGKey(seed), 5)

    def body(acc, k):
        return acc + noisy_square(x, k), None  # eval: span

    total, _ = jax.lax.scan(body, jnp.zeros_like(x), keys)
    return total / 5.0


def eval_inputs():
    return (np.array([0.4, -0.9], np.float32), 11)


def _noise(seed):
    keys = jax.random.split(jax.random.PRNGKey(seed), 5)
    return [np.asarray(jax.random.normal(k, (2,)), np.float64) for k in keys]


def eval_reference(x, seed):
    x = np.asarray(x, np.float64)
    return np.mean([(x + SIGMA * z) ** 2 for z in _noise(seed)], axis=0)
