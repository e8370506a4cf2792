"""static-in-diff look-alike: an integer index array in a differentiable custom_vjp slot, bwd returns None for it.

Report: jax-ml/jax#7652 https://github.com/jax-ml/jax/pull/7652 (custom_vjp functions taking
integer-dtype inputs used to require a float0 cotangent from bwd; JAX now produces the zeros itself,
and the docs recommend a plain argument plus None over nondiff_argnums for such arrays). Here a
gather with a custom scatter-add backward takes its indices as an ordinary argument.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_h3_pr7652_int_index_bwd_none", "family": "static-in-diff",
    "expect": "ok", "source": "jax-ml/jax#7652", "url": "https://github.com/jax-ml/jax/pull/7652",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def gather(table, idx):  # eval: span
    return table[idx]


def _gather_fwd(table, idx):
    return table[idx], (idx, table.shape[0])


def _gather_bwd(res, g):
    idx, n = res
    return jnp.zeros((n,), g.dtype).at[idx].add(g), None  # eval: span


gather.defvjp(_gather_fwd, _gather_bwd)


def eval_fn(table, idx):
    return jnp.sum(gather(table, idx) ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0, 3.0], np.float32), np.array([1, 3, 3], np.int32))


def eval_reference(table, idx):
    t = np.asarray(table, np.float64)
    return np.asarray(np.sum(t[np.asarray(idx)] ** 2))
