import jax
import jax.numpy as jnp


@jax.custom_vjp
def soft_sin(x):
    return jnp.sin(x)


def soft_sin_fwd(x):
    return soft_sin(x), x


def soft_sin_bwd(x, g):
    return (jnp.cos(x) * g,)


soft_sin.defvjp(soft_sin_fwd, soft_sin_bwd, optimize_remat=True)
