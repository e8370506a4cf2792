"""closure look-alike: the fix for jax-ml/jax#2520, the parameter passed explicitly and given a cotangent.

Report: jax-ml/jax#2520 https://github.com/jax-ml/jax/issues/2520; the error text PR #4008 added
says "Try passing the closed-over value into the custom_vjp function as an argument".
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_jax2520_explicit_param", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#2520", "url": "https://github.com/jax-ml/jax/issues/2520",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.custom_vjp
def decay(k, y):  # eval: span
    return jnp.exp(-k * y)


def decay_fwd(k, y):
    out = jnp.exp(-k * y)
    return out, (k, y, out)


def decay_bwd(res, g):
    k, y, out = res
    return jnp.sum(-y * out * g), -k * out * g


decay.defvjp(decay_fwd, decay_bwd)


def eval_fn(k, x):
    return decay(k, x)


def eval_inputs():
    return (np.float32(0.8), np.array([0.5, 1.0], np.float32))


def eval_reference(k, x):
    return np.exp(-np.float64(k) * np.asarray(x, np.float64))
