"""static-in-diff hazard: a step count read from a dict passed in a differentiable slot.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646 (an integer used as a Python
value inside a custom_vjp while it sat in a differentiable position). Here the settings are a
dict: the primal reads `n = opts["n"]` and loops `range(n)`; under `jit` the dict's leaves are
tracers and `range` raises.
"""
import jax
import numpy as np

EVAL = {
    "id": "static-in-diff/jax11646_count_in_dict", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-02", "written_at_commit": "115b9c4617e4f87b47d1ecf56abc6b2b19d66835",
    "argnums": (0,),
}


@jax.custom_vjp
def repeat_half(x, opts):  # eval: span
    n = opts["n"]
    for _ in range(n):  # eval: span
        x = 0.5 * x
    return x


def repeat_half_fwd(x, opts):
    return repeat_half(x, opts), opts


def repeat_half_bwd(opts, g):
    return g * 0.5 ** opts["n"], None


repeat_half.defvjp(repeat_half_fwd, repeat_half_bwd)


def eval_fn(x):
    return repeat_half(x, {"n": 3})  # eval: span


def eval_inputs():
    return (np.float32(8.0),)


def eval_reference(x):
    return np.float64(x) * 0.125
