import jax

from remat import calm_ops, ops


def curvature(x):
    return jax.grad(jax.grad(calm_ops.soft_sin))(x)  # no optimize_remat: second order works


def slope(x):
    return jax.grad(ops.soft_sin)(x)  # one level of reverse mode: what optimize_remat supports
