"""nondiff-array hazard: a Hermite polynomial's degree is a nondiff argument that vmap batches.

Report: y1xiaoc/fwdlap#5 https://github.com/y1xiaoc/fwdlap/issues/5 (a custom_jvp Hermite
function differentiated through a vmapped caller leaked an int array tracer; the maintainer pointed
to the docs: nondiff_argnums is only for values that are never traced). Here a compiled basis
(`jit` of `vmap` over an array of degrees) puts a batch tracer in the nondiff slot inside a staged
computation that grad differentiates afterwards.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/h2_fwdlap5_hermite_degree_nondiff_vmap", "family": "nondiff-array",
    "expect": "hazard", "source": "y1xiaoc/fwdlap#5", "url": "https://github.com/y1xiaoc/fwdlap/issues/5",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}
DEGREES = np.array([0, 1, 2, 3], np.int32)


@partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def hermite(n, x):  # eval: span
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


basis = jax.jit(jax.vmap(hermite, in_axes=(0, None)))  # eval: span


def eval_fn(x):
    return jnp.sum(basis(jnp.asarray(DEGREES), x), axis=0)  # eval: span


def eval_inputs():
    return (np.array([0.3, -0.8, 1.1], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return 1.0 + 2.0 * x + (4.0 * x ** 2 - 2.0) + (8.0 * x ** 3 - 12.0 * x)
