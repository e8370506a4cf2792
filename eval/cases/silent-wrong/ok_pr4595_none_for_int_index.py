"""silent-wrong look-alike: bwd returns None for an integer index argument, as intended.

Source: jax-ml/jax#4595 https://github.com/jax-ml/jax/pull/4595 ("allow custom_vjp bwd to return
Nones for zeros": the shorthand exists for integer-dtype array arguments that are not
differentiated, instead of putting them in nondiff_argnums).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/ok_pr4595_none_for_int_index", "family": "silent-wrong", "expect": "ok",
    "source": "jax-ml/jax#4595", "url": "https://github.com/jax-ml/jax/pull/4595",
    "written_at": "2026-12-01", "written_at_commit": "4615b729f08551e6598efd9f16e68d364163efc2",
    "argnums": (0,), "static": (1,),
}
IDX = np.array([2, 0], np.int32)


@jax.custom_vjp
def gather_scaled(table, idx):
    return 2.0 * table[idx]


def gather_scaled_fwd(table, idx):
    return 2.0 * table[idx], (table.shape, idx)


def gather_scaled_bwd(res, g):
    shape, idx = res
    return jnp.zeros(shape, g.dtype).at[idx].add(2.0 * g), None  # eval: span


gather_scaled.defvjp(gather_scaled_fwd, gather_scaled_bwd)


def eval_fn(table, idx=IDX):
    return gather_scaled(table, idx)


def eval_inputs():
    return (np.array([1.0, -2.0, 0.5], np.float32), IDX)


def eval_reference(table, idx=IDX):
    return 2.0 * np.asarray(table, np.float64)[np.asarray(idx)]
