"""E06: a jvp rule whose primal output has another container than the primal function's, under grad of jit (JAX checks it only when the primal was traced first)."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return (jnp.sin(x),), (jnp.cos(x) * t,)


jax.grad(jax.jit(f))(1.0)
