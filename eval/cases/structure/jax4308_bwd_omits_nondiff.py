"""structure hazard: bwd written without the leading nondiff parameter.

Report: jax-ml/jax#4308 https://github.com/jax-ml/jax/issues/4308. The reporter's custom_vjp had
`nondiff_argnums=(1,)` but `bwd(residuals, cotangents)`: JAX calls bwd as
`bwd(*nondiff, residuals, cotangent)`, one argument more than it accepts.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "structure/jax4308_bwd_omits_nondiff", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#4308", "url": "https://github.com/jax-ml/jax/issues/4308",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "static": (1,),
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def repeat_sum(x, times):
    return x * times


def repeat_sum_fwd(x, times):
    return x * times, None


def repeat_sum_bwd(residuals, g):  # eval: span
    return (g,)


repeat_sum.defvjp(repeat_sum_fwd, repeat_sum_bwd)


def eval_fn(x, times):
    return repeat_sum(x, times)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), 3)


def eval_reference(x, times):
    return np.asarray(x, np.float64) * times


def eval_grad_reference(x, times):
    return (np.ones(2),)
