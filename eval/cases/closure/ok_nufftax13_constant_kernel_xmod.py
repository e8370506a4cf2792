"""closure look-alike, caller in another module: the kernel closes over a Python constant only.

Source: GragasLab/nufftax#13 https://github.com/GragasLab/nufftax/issues/13 (the fix the
maintainers describe: the kernel's width is a fixed Python number, and only the point locations
and weights are differentiated). The caller (`_ok_nufftax13_constant_driver.py`) imports the
library module by name and builds its kernel from a module constant.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_nufftax13_constant_kernel_xmod", "family": "closure", "expect": "ok",
    "source": "GragasLab/nufftax#13", "url": "https://github.com/GragasLab/nufftax/issues/13",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_ok_nufftax13_constant_driver.py",
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
