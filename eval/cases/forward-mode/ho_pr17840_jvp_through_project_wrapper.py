"""forward-mode hazard: `jax.jvp` of a function whose custom_vjp comes from a project decorator.

Report: jax-ml/jax#17840 https://github.com/jax-ml/jax/pull/17840 (a library author's solver is a
custom_vjp, users need JVPs of it, and JAX refuses forward mode on a custom_vjp function; the PR
proposes an opt-in). Here the custom_vjp is made by `reverse_rule`, a one-line project wrapper
around `jax.custom_vjp` in another module, and the caller takes a directional derivative with
`jax.jvp` (the `jvp` and `jacfwd` checks).
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _ho_diffrules import reverse_rule

EVAL = {
    "id": "forward-mode/ho_pr17840_jvp_through_project_wrapper", "family": "forward-mode", "expect": "hazard",
    "source": "jax-ml/jax#17840", "url": "https://github.com/jax-ml/jax/pull/17840",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jvp", "jacfwd"], "heldout": True,
}


@reverse_rule  # eval: span
def newton_sqrt(a):  # eval: span
    y = jnp.ones_like(a)
    for _ in range(30):
        y = 0.5 * (y + a / y)
    return y


def _newton_sqrt_fwd(a):
    y = newton_sqrt(a)
    return y, y


def _newton_sqrt_bwd(y, g):
    return (g / (2.0 * y),)


newton_sqrt.defvjp(_newton_sqrt_fwd, _newton_sqrt_bwd)


def eval_fn(a):
    return newton_sqrt(a)


def eval_inputs():
    return (np.array([2.0, 0.5, 9.0], np.float32),)


def eval_reference(a):
    return np.sqrt(np.asarray(a, np.float64))


def eval_custom():
    a = jnp.asarray(eval_inputs()[0])

    def directional():
        _, t = jax.jvp(newton_sqrt, (a,), (jnp.ones_like(a),))  # eval: span
        return t, 0.5 / np.sqrt(np.asarray(a, np.float64))

    return {"directional_jvp": directional}
