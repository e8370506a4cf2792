"""nondiff-array hazard (custom_jvp): an index array in nondiff_argnums leaks a tracer under jit + jacobian.

Report: jax-ml/jax#23065 https://github.com/jax-ml/jax/issues/23065 ("custom_jvp leaks tracers if
they're marked as nondiff_argnum"). A gather with an integer index array marked nondiff, the
function jitted, then `jax.jacobian`; with jax_check_tracer_leaks on, a leaked tracer is reported.
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "nondiff-array/jvp_jax23065_index_leak", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#23065", "url": "https://github.com/jax-ml/jax/issues/23065",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def take(x, idx):  # eval: span
    return x[idx] * 2.0


@take.defjvp
def take_jvp(idx, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return take(x, idx), x_dot[idx] * 2.0


take_jit = jax.jit(take)


def eval_fn(x, idx):
    return take_jit(x, idx)


def eval_inputs():
    return (np.arange(6.0, dtype=np.float32), np.array([1, 3, 4]))


def eval_reference(x, idx):
    return np.asarray(x, np.float64)[idx] * 2.0


def eval_custom():
    def jacobian_with_leak_check():
        x, idx = eval_inputs()
        with jax.check_tracer_leaks(True):
            got = jax.jacobian(take_jit)(x, idx)
        expected = np.zeros((3, 6))
        expected[np.arange(3), idx] = 2.0
        return got, expected

    return {"jacobian_leak_check": jacobian_with_leak_check}
