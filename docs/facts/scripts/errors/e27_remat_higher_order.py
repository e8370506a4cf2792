"""E27: second-order reverse mode through a custom_vjp registered with optimize_remat=True."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return f(x), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd, optimize_remat=True)
jax.grad(jax.grad(f))(1.0)
