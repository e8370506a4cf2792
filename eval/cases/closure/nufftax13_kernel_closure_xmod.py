"""closure hazard, caller in another module: the nufftax spreading custom_vjp with a nondiff kernel.

Report: GragasLab/nufftax#13 https://github.com/GragasLab/nufftax/issues/13. Same construct as
`nufftax13_kernel_closure_jit`; as in the library, the user's jitted loss that builds the kernel
from the differentiated width lives in another file (`_nufftax13_driver.py`).
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/nufftax13_kernel_closure_xmod", "family": "closure", "expect": "hazard",
    "source": "GragasLab/nufftax#13", "url": "https://github.com/GragasLab/nufftax/issues/13",
    "written_at": "2026-12-01", "written_at_commit": "2a335300906e04db671c27a56be74cfb4c8ccebc",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_nufftax13_driver.py",
}
GRID = np.linspace(-1.0, 1.0, 5).astype(np.float32)


@partial(jax.custom_vjp, nondiff_argnums=(2,))  # eval: span
def spread(points, weights, kernel):  # eval: span
    return jnp.sum(weights[:, None] * kernel(GRID[None, :] - points[:, None]), axis=0)


def spread_fwd(points, weights, kernel):
    return spread(points, weights, kernel), (points, weights)


def spread_bwd(kernel, res, g):
    points, weights = res
    _, vjp = jax.vjp(lambda p, w: jnp.sum(w[:, None] * kernel(GRID[None, :] - p[:, None]), axis=0),
                     points, weights)
    return vjp(g)


spread.defvjp(spread_fwd, spread_bwd)
