"""structure look-alike: jax-ml/jax#8356 written correctly, the shape tuple in nondiff_argnums.

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356. A static shape is what
nondiff_argnums is for; bwd receives it first and returns cotangents for the two arrays only.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax8356_shape_nondiff", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#8356", "url": "https://github.com/jax-ml/jax/issues/8356",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "static": (2,),
}


def _pad_scale(data, gain, out_dims):
    out = jnp.zeros(out_dims, data.dtype)
    return out.at[: data.shape[0]].set(data * gain)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def pad_scale(data, gain, out_dims):  # eval: span
    return _pad_scale(data, gain, out_dims)


def pad_scale_fwd(data, gain, out_dims):
    return _pad_scale(data, gain, out_dims), (data, gain)


def pad_scale_bwd(out_dims, res, g):
    data, gain = res
    n = data.shape[0]
    return g[:n] * gain, jnp.sum(g[:n] * data)


pad_scale.defvjp(pad_scale_fwd, pad_scale_bwd)


def eval_fn(data, gain, out_dims):
    return pad_scale(data, gain, out_dims)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), np.float32(3.0), (4,))


def eval_reference(data, gain, out_dims):
    out = np.zeros(out_dims)
    out[:2] = np.asarray(data, np.float64) * np.float64(gain)
    return out
