"""nondiff-array look-alike (fixed report): custom_jvp with a shape and a PRNG key in nondiff_argnums, vmapped over keys.

Report: jax-ml/jax#3964 https://github.com/jax-ml/jax/issues/3964 ("Bad interaction between batch
trace and custom jvp trace"), fixed by PR #4008. custom_jvp accepts tracers in nondiff slots, the
key is never differentiated, and the derivative w.r.t. the differentiable parameter is right.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_jax3964_key_custom_jvp_vmap", "family": "nondiff-array", "expect": "ok",
    "source": "jax-ml/jax#3964", "url": "https://github.com/jax-ml/jax/issues/3964",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "vmap_in_axes": (None, 0),
}


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 2))  # eval: span
def scaled_noise(shape, scale, seed):  # eval: span
    return scale * jax.random.uniform(seed, shape)


@scaled_noise.defjvp
def scaled_noise_jvp(shape, seed, primals, tangents):
    (scale,), (scale_dot,) = primals, tangents
    base = jax.random.uniform(seed, shape)
    return scale * base, base * scale_dot


def eval_fn(scale, seed):
    return scaled_noise((3,), scale, seed)


def eval_inputs():
    return (np.float32(1.5), jax.random.PRNGKey(1))


def _base(seed):
    return np.asarray(jax.random.uniform(jnp.asarray(seed), (3,)), np.float64)


def eval_reference(scale, seed):
    return np.float64(scale) * _base(seed)


def eval_custom():
    def vmap_over_keys():
        keys = jax.random.split(jax.random.PRNGKey(1), 4)
        got = jax.vmap(lambda k: scaled_noise((3,), 1.5, k))(keys)
        return got, np.stack([1.5 * _base(k) for k in keys])

    return {"vmap_keys": vmap_over_keys}
