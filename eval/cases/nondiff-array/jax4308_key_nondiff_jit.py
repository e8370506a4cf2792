"""nondiff-array hazard: a PRNG key in custom_vjp nondiff_argnums, called under `jit`.

Report: jax-ml/jax#4308 https://github.com/jax-ml/jax/issues/4308. The reporter put an RNG key in
a custom_vjp nondiff slot to avoid needing its cotangent. A key that is a jit argument is a
tracer, so the nondiff slot raises UnexpectedTracerError (keys are data, not static values).
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jax4308_key_nondiff_jit", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#4308", "url": "https://github.com/jax-ml/jax/issues/4308",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def noisy(x, rng):  # eval: span
    return x + 0.1 * jax.random.normal(rng, x.shape)


def noisy_fwd(x, rng):
    return noisy(x, rng), None


def noisy_bwd(rng, _, g):
    return (g,)


noisy.defvjp(noisy_fwd, noisy_bwd)


def eval_fn(x, rng):
    return noisy(x, rng)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), jax.random.PRNGKey(0))


def eval_reference(x, rng):
    noise = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (2,)), np.float64)
    return np.asarray(x, np.float64) + 0.1 * noise
