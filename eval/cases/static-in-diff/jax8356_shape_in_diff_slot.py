"""static-in-diff hazard: a shape tuple passed as a differentiable custom_vjp argument (bwd returns None for it).

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356. The fix discussed there (return
None for the shape argument's whole subtree, legal since jax-ml/jax#4595) repairs grad, but the
shape is still a regular argument: under `jit` custom_vjp traces it, and `jnp.zeros(out_dims)`
fails on a traced shape (found by this evaluation's oracle, JAX 0.10.2). The shape belongs in
nondiff_argnums.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/jax8356_shape_in_diff_slot", "family": "static-in-diff", "expect": "hazard",
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
    return g[:n] * gain, jnp.sum(g[:n] * data), None


pad_scale.defvjp(pad_scale_fwd, pad_scale_bwd)


def eval_fn(data, gain, out_dims):
    return pad_scale(data, gain, out_dims)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), np.float32(3.0), (4,))


def eval_reference(data, gain, out_dims):
    out = np.zeros(out_dims)
    out[:2] = np.asarray(data, np.float64) * np.float64(gain)
    return out
