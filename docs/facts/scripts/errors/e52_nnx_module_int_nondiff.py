"""E52: flax.nnx.custom_vjp with an int nondiff_argnums position holding a Module (default mode)."""
import jax
import jax.numpy as jnp
from flax import nnx


class Lin(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(()))


@nnx.custom_vjp(nondiff_argnums=(0,))
def f(m, x):
    return m.w[...] * jnp.sin(x)


def f_fwd(m, x):
    return f(m, x), x


def f_bwd(m, x, g):
    (m_g, out_g) = g
    return (out_g * m.w[...] * jnp.cos(x),)


f.defvjp(f_fwd, f_bwd)
jax.grad(lambda x: f(Lin(), x))(1.0)
