"""closure hazard, caller in another module: a kernel factory's closure reaches a nondiff slot.

Report: GragasLab/nufftax#13 https://github.com/GragasLab/nufftax/issues/13 (the spreading
custom_vjp takes the kernel as a nondiff callable; the user's jitted loss built the kernel from the
width it differentiates). Here the library module only defines the custom_vjp; the user's script
(`_nufftax13_factory_driver.py`) imports it by name and builds the kernel with a small factory
`make_kernel(width)` inside its jitted loss, so the closure and the tracer are both in the caller.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/nufftax13_factory_kernel_xmod", "family": "closure", "expect": "hazard",
    "source": "GragasLab/nufftax#13", "url": "https://github.com/GragasLab/nufftax/issues/13",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_nufftax13_factory_driver.py",
}
NODES = np.linspace(-1.0, 1.0, 4).astype(np.float32)


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def interpolate(kernel, locs, vals):  # eval: span
    return jnp.sum(vals[:, None] * kernel(NODES[None, :] - locs[:, None]), axis=0)


def interpolate_fwd(kernel, locs, vals):
    return interpolate(kernel, locs, vals), (locs, vals)


def interpolate_bwd(kernel, res, g):
    locs, vals = res
    _, pullback = jax.vjp(lambda a, b: jnp.sum(b[:, None] * kernel(NODES[None, :] - a[:, None]), axis=0),
                          locs, vals)
    return pullback(g)


interpolate.defvjp(interpolate_fwd, interpolate_bwd)
