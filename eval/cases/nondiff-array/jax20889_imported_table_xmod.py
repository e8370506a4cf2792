"""nondiff-array hazard, caller in another module: a table built by an imported function reaches a nondiff slot.

Report: jax-ml/jax#20889 https://github.com/jax-ml/jax/issues/20889 (an array-valued nondiff
argument leaks a tracer once the caller is staged out). Here the library module defines the
custom_vjp, whose body hands the table to a helper (so the definition alone does not show an
array use), and a function `init_table()` that builds the table with `jnp`. The user's script
(`_jax20889_table_driver.py`) imports both by name and calls `init_table()` inside its jitted
model: the table is a tracer there, and JAX raises UnexpectedTracerError.
"""
from functools import partial

import jax
import jax.numpy as jnp

EVAL = {
    "id": "nondiff-array/jax20889_imported_table_xmod", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#20889", "url": "https://github.com/jax-ml/jax/issues/20889",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "driver": "_jax20889_table_driver.py",
}


def init_table():
    return jnp.linspace(0.5, 2.5, 5)


def _weight(table, x):
    return x * table[1]


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def warp(table, x):  # eval: span
    return _weight(table, x)


def warp_fwd(table, x):
    return warp(table, x), None


def warp_bwd(table, _, g):
    return (_weight(table, g),)


warp.defvjp(warp_fwd, warp_bwd)
