"""E16: a fwd rule whose primal output has another container than the primal's, under grad of jit (JAX checks it only when the primal was traced first)."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    return (jnp.sin(x),), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)
jax.grad(jax.jit(f))(1.0)
