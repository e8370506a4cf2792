"""closure look-alike: custom_vjp rules that use NumPy only on shapes and constants.

Source: census row E40 of docs/facts/jax-errors.md, the correct neighbour of
census7_numpy_in_jvp_rule: `np.prod(x.shape)` and `np.pi` are Python values under every
transform.
https://github.com/jax-ml/jax/issues/1142
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_census7_numpy_constants_in_rules", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#1142", "url": "https://github.com/jax-ml/jax/issues/1142",
    "written_at": "2026-12-07", "written_at_commit": "89458f57b4bf127d8a4a969ec2e4ddf051aca0dd",
    "argnums": (0,),
}


@jax.custom_vjp
def mean_sq(x):  # eval: span
    return jnp.sum(x**2) / np.prod(x.shape)


def mean_sq_fwd(x):
    return mean_sq(x), x


def mean_sq_bwd(x, g):
    n = np.float32(np.prod(x.shape)) * np.float32(np.pi / np.pi)
    return (2.0 * x * g / n,)


mean_sq.defvjp(mean_sq_fwd, mean_sq_bwd)


def eval_fn(x):
    return mean_sq(x)


def eval_inputs():
    return (np.array([0.3, -1.2, 2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sum(x**2) / x.size
