"""structure hazard: bwd omits the cotangent slot of a tuple-valued (shape) argument.

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356 ("Improve error message in
custom_vjp when returning the wrong grad structure"). The primal took an output-shape tuple as a
regular argument; bwd returned cotangents for the two arrays only.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax8356_missing_pytree_slot", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#8356", "url": "https://github.com/jax-ml/jax/issues/8356",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "static": (2,),
}


def _pad_scale(data, gain, out_dims):
    out = jnp.zeros(out_dims, data.dtype)
    return out.at[: data.shape[0]].set(data * gain)


@jax.custom_vjp
def pad_scale(data, gain, out_dims):  # eval: span
    return _pad_scale(data, gain, out_dims)


def pad_scale_fwd(data, gain, out_dims):
    return _pad_scale(data, gain, out_dims), (data, gain)


def pad_scale_bwd(res, g):
    data, gain = res
    n = data.shape[0]
    return g[:n] * gain, jnp.sum(g[:n] * data)  # eval: span


pad_scale.defvjp(pad_scale_fwd, pad_scale_bwd)


def eval_fn(data, gain, out_dims):
    return pad_scale(data, gain, out_dims)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), np.float32(3.0), (4,))


def eval_reference(data, gain, out_dims):
    out = np.zeros(out_dims)
    out[:2] = np.asarray(data, np.float64) * np.float64(gain)
    return out
