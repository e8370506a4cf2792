"""nondiff-array look-alike, caller in another module: the index is a static Python int.

Source: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 (the workaround discussed there:
keep nondiff arguments Python values, static in the jit). The caller
(`_ok_jax2912_gather_static_driver.py`) imports the library by name and marks the index static.
"""
from functools import partial

import jax
import jax.numpy as jnp

EVAL = {
    "id": "nondiff-array/ok_jax2912_gather_static_xmod", "family": "nondiff-array", "expect": "ok",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "static": (1,), "driver": "_ok_jax2912_gather_static_driver.py",
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def gather_rows(x, idx):  # eval: span
    return x[idx]


def gather_rows_fwd(x, idx):
    return x[idx], jnp.zeros_like(x)


def gather_rows_bwd(idx, zeros, g):
    return (zeros.at[idx].add(g),)


gather_rows.defvjp(gather_rows_fwd, gather_rows_bwd)
