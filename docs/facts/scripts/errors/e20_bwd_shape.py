"""E20: a bwd rule whose cotangent has another shape than its input."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sum(jnp.sin(x))


def f_fwd(x):
    return f(x), x


def f_bwd(x, g):
    return (jnp.sum(jnp.cos(x)) * g,)


f.defvjp(f_fwd, f_bwd)
jax.grad(f)(jnp.ones(3))
