"""registration look-alike (fixed report): a custom_vjp primal with a default argument, called with a keyword.

Report: jax-ml/jax#1270 https://github.com/jax-ml/jax/issues/1270 ("Using defvjp for functions
with kwargs", against the old custom_transforms API); the maintainer shows the custom_vjp form
working with `grad_fn(0., y=4.)`. custom_vjp binds the keyword to its position.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/ok_jax1270_keyword_call", "family": "registration", "expect": "ok",
    "source": "jax-ml/jax#1270", "url": "https://github.com/jax-ml/jax/issues/1270",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_vjp
def shifted_sin(x, y=3.0):  # eval: span
    return jnp.sin(x) + y


def shifted_sin_fwd(x, y=3.0):
    return shifted_sin(x, y), jnp.cos(x)


def shifted_sin_bwd(cos_x, g):
    return g * cos_x, g


shifted_sin.defvjp(shifted_sin_fwd, shifted_sin_bwd)


def eval_fn(x):
    return shifted_sin(x, y=4.0)


def eval_inputs():
    return (np.float32(0.3),)


def eval_reference(x):
    return np.sin(np.float64(x)) + 4.0
