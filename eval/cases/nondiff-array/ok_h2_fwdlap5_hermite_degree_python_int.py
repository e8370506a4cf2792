"""nondiff-array look-alike: the Hermite degree in the nondiff slot is a Python int from a loop.

Report: y1xiaoc/fwdlap#5 https://github.com/y1xiaoc/fwdlap/issues/5 (the maintainer's advice:
keep nondiff_argnums for values that are never traced). The basis loops over the degrees in
Python, so every degree reaching the nondiff slot is a plain int, under jit, vmap and grad alike.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_h2_fwdlap5_hermite_degree_python_int", "family": "nondiff-array",
    "expect": "ok", "source": "y1xiaoc/fwdlap#5", "url": "https://github.com/y1xiaoc/fwdlap/issues/5",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}
DEGREES = (0, 1, 2, 3)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def hermite(n, x):
    def body(_, carry):
        h_prev, h, k = carry
        return h, 2.0 * x * h - 2.0 * k * h_prev, k + 1.0

    h0, h1 = jnp.ones_like(x), 2.0 * x
    _, h, _ = jax.lax.fori_loop(0, n, body, (jnp.zeros_like(x), h0, jnp.zeros_like(x)))
    return h


@hermite.defjvp
def _hermite_jvp(n, primals, tangents):
    (x,), (dx,) = primals, tangents
    lower = jnp.where(n > 0, hermite(jnp.maximum(n - 1, 0), x), 0.0)
    return hermite(n, x), 2.0 * n * lower * dx


def eval_fn(x):
    basis = jnp.stack([hermite(d, x) for d in DEGREES])
    return jnp.sum(basis, axis=0)


def eval_inputs():
    return (np.array([0.3, -0.8, 1.1], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return 1.0 + 2.0 * x + (4.0 * x ** 2 - 2.0) + (8.0 * x ** 3 - 12.0 * x)
