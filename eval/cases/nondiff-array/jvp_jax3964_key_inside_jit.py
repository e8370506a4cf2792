"""nondiff-array hazard (custom_jvp): a PRNG key made inside jit in custom_jvp nondiff_argnums, differentiated.

Report: jax-ml/jax#3964 https://github.com/jax-ml/jax/issues/3964 (a reporter's comment: the same
UnexpectedTracerError for `jax.jit(lambda seed: sample(...))(key)`); the reported jit/vmap calls
work since jax-ml/jax#4008. Written as a look-alike; JAX 0.10.2 says otherwise: the key is a
tracer of the jit, and grad through the jitted caller fails ("No constant handler").
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jvp_jax3964_key_inside_jit", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#3964", "url": "https://github.com/jax-ml/jax/issues/3964",
    "written_at": "2026-12-01", "written_at_commit": "5408ea44d83e030fbb42370e27bc8d5106b9dfb2",
    "argnums": (0,), "static": (1,),
}


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def jittered(scale, key):  # eval: span
    return scale * (1.0 + 0.1 * jax.random.normal(key, (2,)))


@jittered.defjvp
def jittered_jvp(key, primals, tangents):
    (scale,), (scale_dot,) = primals, tangents
    noise = 1.0 + 0.1 * jax.random.normal(key, (2,))
    return scale * noise, noise * scale_dot


_jitted = jax.jit(lambda scale, seed: jittered(scale, jax.random.PRNGKey(seed)))  # eval: span


def eval_fn(scale, seed):
    return _jitted(scale, seed)


def eval_inputs():
    return (np.float32(1.5), 3)


def eval_reference(scale, seed):
    noise = np.asarray(jax.random.normal(jax.random.PRNGKey(seed), (2,)), np.float64)
    return np.float64(scale) * (1.0 + 0.1 * noise)
