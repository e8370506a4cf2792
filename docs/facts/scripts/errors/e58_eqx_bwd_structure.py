"""E58: equinox.filter_custom_vjp bwd returning a tuple, not one pytree shaped like vjp_arg."""
import equinox as eqx
import jax
import jax.numpy as jnp


@eqx.filter_custom_vjp
def f(x):
    return jnp.sin(x)


@f.def_fwd
def f_fwd(perturbed, x):
    return jnp.sin(x), x


@f.def_bwd
def f_bwd(res, g, perturbed, x):
    return (jnp.cos(res) * g,)


jax.grad(f)(jnp.float32(1.0))
