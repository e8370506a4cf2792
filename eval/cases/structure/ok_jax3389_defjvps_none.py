"""structure look-alike (fixed report): defjvps with None for the first argument's rule.

Report: jax-ml/jax#3389 https://github.com/jax-ml/jax/issues/3389 ("custom_jvp does not work when
first jvp rule is None"), fixed by PR #3390.
"""
import jax
import numpy as np

EVAL = {
    "id": "structure/ok_jax3389_defjvps_none", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#3389", "url": "https://github.com/jax-ml/jax/issues/3389",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (1,),
}


@jax.custom_jvp
def cubed_times(x, y):  # eval: span
    return x ** 3 * y


cubed_times.defjvps(None, lambda y_dot, primal_out, x, y: x ** 3 * y_dot)


def eval_fn(x, y):
    return cubed_times(x, y)


def eval_inputs():
    return (np.float32(2.0), np.float32(3.0))


def eval_reference(x, y):
    return np.float64(x) ** 3 * np.float64(y)
