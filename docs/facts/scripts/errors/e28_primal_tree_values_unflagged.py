"""E28: custom_vjp_primal_tree_values in a fwd rule registered without symbolic_zeros=True."""
import jax
import jax.numpy as jnp
from jax.custom_derivatives import custom_vjp_primal_tree_values


@jax.custom_vjp
def f(x):
    return jnp.sin(x)


def f_fwd(x):
    x = custom_vjp_primal_tree_values(x)
    return f(x), x


def f_bwd(x, g):
    return (jnp.cos(x) * g,)


f.defvjp(f_fwd, f_bwd)
jax.grad(f)(1.0)
