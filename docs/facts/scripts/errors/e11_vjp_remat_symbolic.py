"""E11: defvjp with symbolic_zeros=True and optimize_remat=True."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return f(x.value), x.value


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd, symbolic_zeros=True, optimize_remat=True)
