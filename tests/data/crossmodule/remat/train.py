import jax

from remat import ops
from remat.ops import soft_sin


def curvature(x):
    return jax.grad(jax.grad(ops.soft_sin))(x)


def hessian_row(x):
    return jax.jacrev(jax.grad(soft_sin))(x)
