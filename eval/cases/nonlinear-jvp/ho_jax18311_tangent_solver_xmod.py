"""nonlinear-jvp hazard: a custom_jvp tangent solved by an imported iterative helper (a while_loop).

Report: jax-ml/jax#18311 https://github.com/jax-ml/jax/issues/18311 (a custom_jvp whose tangent
reuses an adaptive while_loop; forward mode worked, reverse mode failed). Here the root of
`y = a * cos(y)` is found by a project helper `fixed_point` from another module, and the rule
solves the tangent equation with the same helper, so the while_loop is one import away from the rule.
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _ho_iterative import fixed_point

EVAL = {
    "id": "nonlinear-jvp/ho_jax18311_tangent_solver_xmod", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#18311", "url": "https://github.com/jax-ml/jax/issues/18311",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def kepler_root(a):  # eval: span
    return fixed_point(lambda y: a * jnp.cos(y), jnp.zeros_like(a))


@kepler_root.defjvp
def kepler_root_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    y = kepler_root(a)
    # dy = da*cos(y) - a*sin(y)*dy, solved by the same iteration
    dy = fixed_point(lambda t: da * jnp.cos(y) - a * jnp.sin(y) * t, jnp.zeros_like(a))  # eval: span
    return y, dy


def eval_fn(a):
    return kepler_root(a)


def eval_inputs():
    return (np.float32(0.5),)


def eval_reference(a):
    y = 0.0
    for _ in range(200):
        y = np.float64(a) * np.cos(y)
    return np.float64(y)
