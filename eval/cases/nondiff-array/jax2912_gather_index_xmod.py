"""nondiff-array hazard, caller in another module: a jitted caller passes a traced index array.

Report: jax-ml/jax#2912 https://github.com/jax-ml/jax/issues/2912 (a nondiff argument becomes a
tracer under jit and leaks into the custom_vjp; jax-ml/jax#23065 shows the same for an index array).
The library module only indexes with the nondiff `idx` (an int would be fine); the caller
(`_jax2912_gather_driver.py`) imports it by name and passes an index array through `jax.jit`.
"""
from functools import partial

import jax
import jax.numpy as jnp

EVAL = {
    "id": "nondiff-array/jax2912_gather_index_xmod", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#2912", "url": "https://github.com/jax-ml/jax/issues/2912",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "vmap_in_axes": (0, None), "driver": "_jax2912_gather_driver.py",
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def gather_rows(x, idx):  # eval: span
    return x[idx]


def gather_rows_fwd(x, idx):
    return x[idx], jnp.zeros_like(x)


def gather_rows_bwd(idx, zeros, g):
    return (zeros.at[idx].add(g),)


gather_rows.defvjp(gather_rows_fwd, gather_rows_bwd)
