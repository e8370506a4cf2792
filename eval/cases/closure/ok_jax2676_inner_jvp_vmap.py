"""closure look-alike (fixed report): a custom_jvp defined inside a function, vmapped over its second argument.

Report: jax-ml/jax#2676 https://github.com/jax-ml/jax/issues/2676 ("custom_jvp functions not
allowed to close over values"); after PR #4008 "this works" (maintainer's comment).
"""
import jax
import numpy as np

EVAL = {
    "id": "closure/ok_jax2676_inner_jvp_vmap", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#2676", "url": "https://github.com/jax-ml/jax/issues/2676",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (1,), "vmap_in_axes": (None, 0),
}


def eval_fn(x, y):
    @jax.custom_jvp
    def mix(z, w):  # eval: span
        return 2.0 * z - w

    @mix.defjvp
    def mix_jvp(primals, tangents):
        (z, w), (z_dot, w_dot) = primals, tangents
        return 2.0 * z - w, 2.0 * z_dot - w_dot

    return mix(x, y) * x


def eval_inputs():
    return (np.float32(1.0), np.array([4.0, 5.0, 6.0], np.float32))


def eval_reference(x, y):
    x = np.float64(x)
    return (2.0 * x - np.asarray(y, np.float64)) * x
