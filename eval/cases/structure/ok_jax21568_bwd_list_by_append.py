"""structure look-alike: bwd builds its cotangents in a list, one append per argument, and returns it.

Report: jax-ml/jax#21568 https://github.com/jax-ml/jax/pull/21568 ("[custom_vjp] allow bwd rule to
produce top-level list (not just tuple)"): a list of the right length is converted to a tuple.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax21568_bwd_list_by_append", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#21568", "url": "https://github.com/jax-ml/jax/pull/21568",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0, 1),
}


@jax.custom_vjp
def weighted(x, w):
    return jnp.sum(x * w)


def weighted_fwd(x, w):
    return weighted(x, w), (x, w)


def weighted_bwd(res, g):
    x, w = res
    cts = []
    cts.append(g * w)
    cts.append(g * x)
    return cts


weighted.defvjp(weighted_fwd, weighted_bwd)


def eval_fn(x, w):
    return weighted(x, w)


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32), np.array([2.0, 3.0], np.float32))


def eval_reference(x, w):
    return np.sum(np.asarray(x, np.float64) * np.asarray(w, np.float64))
