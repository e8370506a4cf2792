"""nondiff-array look-alike: a string option in nondiff_argnums (fwd keeps the primal order, bwd gets it first).

Report: jax-ml/jax#4617 https://github.com/jax-ml/jax/issues/4617 (docs for
custom_vjp(nondiff_argnums) slightly misleading). The reporter's code (an axis-name string in a
nondiff slot, `fwd(x, name)`, `bwd(name, res, g)`) is valid; only the docs were wrong.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_jax4617_string_nondiff", "family": "nondiff-array", "expect": "ok",
    "source": "jax-ml/jax#4617", "url": "https://github.com/jax-ml/jax/issues/4617",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def reduce_by(x, mode):  # eval: span
    return jnp.sum(x) if mode == "sum" else jnp.max(x)


def reduce_by_fwd(x, mode):
    return reduce_by(x, mode), x


def reduce_by_bwd(mode, x, g):
    if mode == "sum":
        return (g * jnp.ones_like(x),)
    return (g * (x == jnp.max(x)),)


reduce_by.defvjp(reduce_by_fwd, reduce_by_bwd)


def eval_fn(x):
    return reduce_by(x, "sum")


def eval_inputs():
    return (np.array([1.0, 4.0, 2.0], np.float32),)


def eval_reference(x):
    return np.sum(np.asarray(x, np.float64))
