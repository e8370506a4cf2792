"""structure hazard: defjvps given one rule for a function of two arguments.

Report: jax-ml/jax#3389 https://github.com/jax-ml/jax/issues/3389 (defjvps takes one tangent
function per positional argument, None for the ones without a rule). Passing fewer rules than
arguments fails in JAX 0.10.2 with `ValueError: safe_zip() argument 1 has length 1 ...`.
"""
import jax
import numpy as np

EVAL = {
    "id": "structure/jax3389_defjvps_one_rule_two_args", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#3389", "url": "https://github.com/jax-ml/jax/issues/3389",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_jvp
def weighted(x, w):  # eval: span
    return x * w


weighted.defjvps(lambda x_dot, out, x, w: x_dot * w)  # eval: span


def eval_fn(x, w):
    return weighted(x, w)


def eval_inputs():
    return (np.float32(2.0), np.float32(3.0))


def eval_reference(x, w):
    return np.float64(x) * np.float64(w)
