"""E66: the registration of the other kind: `@f.defjvp` on a `jax.custom_vjp` (the custom_vjp object
hands unknown attributes to the function it wraps, hence `'function' object`); raised at import."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.tanh(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.tanh(x), (1 - jnp.tanh(x) ** 2) * t
