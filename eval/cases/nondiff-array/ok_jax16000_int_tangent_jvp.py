"""nondiff-array look-alike (fixed report): a custom_jvp rule that forwards an integer argument's tangent to jax.jvp.

Report: jax-ml/jax#16000 https://github.com/jax-ml/jax/issues/16000 ("jax.custom_jvp promotes
tangent-of-integer to integer (not float0)"); verified fixed by a maintainer in 2026: the rule
now receives a float0 tangent, which jax.jvp accepts.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_jax16000_int_tangent_jvp", "family": "nondiff-array", "expect": "ok",
    "source": "jax-ml/jax#16000", "url": "https://github.com/jax-ml/jax/issues/16000",
    "written_at": "2026-12-01", "written_at_commit": "4ca3eb3a9f0b546f5fb228ede943c80bf9bdb7b0",
    "argnums": (0,), "static": (1,), "extra": ["jvp"],
}


def _shifted_sin(x, k):
    return jnp.sin(x) + k


@jax.custom_jvp
def shifted_sin(x, k):  # eval: span
    return _shifted_sin(x, k)


@shifted_sin.defjvp
def shifted_sin_jvp(primals, tangents):
    return jax.jvp(_shifted_sin, primals, tangents)


def eval_fn(x, k):
    return shifted_sin(x, k)


def eval_inputs():
    return (np.float32(0.4), 1)


def eval_reference(x, k):
    return np.sin(np.float64(x)) + k
