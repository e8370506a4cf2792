"""structure hazard: the primal returns a list of outputs while fwd's primal output is a tuple.

Report: NVIDIA/cuEquivariance#162 https://github.com/NVIDIA/cuEquivariance/issues/162 (triangle
attention custom_vjp failed in training; a user fixed it by making fwd return a list like the
primal), fixed properly in https://github.com/NVIDIA/cuEquivariance/pull/295 (both tuples).
"""
import jax
import numpy as np

EVAL = {
    "id": "structure/cueq162_list_vs_tuple", "family": "structure", "expect": "hazard",
    "source": "NVIDIA/cuEquivariance#162", "url": "https://github.com/NVIDIA/cuEquivariance/issues/162",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.custom_vjp
def scaled_pair(x):  # eval: span
    return [2.0 * x, x * x]  # eval: span


def scaled_pair_fwd(x):
    return (2.0 * x, x * x), x  # eval: span


def scaled_pair_bwd(x, cts):
    a, b = cts
    return (2.0 * a + 2.0 * x * b,)


scaled_pair.defvjp(scaled_pair_fwd, scaled_pair_bwd)


def eval_fn(x):
    a, b = scaled_pair(x)
    return a + b


def eval_inputs():
    return (np.array([0.5, 1.5], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return 2 * x + x * x
