# Pattern (a sharded MoE layer): an axis name in nondiff_argnums passed to a collective.
from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def reduce_scatter(x, axis_name):
    return jax.lax.psum_scatter(x, axis_name, scatter_dimension=0, tiled=True)


def reduce_scatter_fwd(x, axis_name):
    return reduce_scatter(x, axis_name), None


def reduce_scatter_bwd(axis_name, _, g):
    return (jax.lax.all_gather(g, axis_name, tiled=True),)


reduce_scatter.defvjp(reduce_scatter_fwd, reduce_scatter_bwd)
