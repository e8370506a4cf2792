"""E38: a custom_vjp nested in a function, closing over its parameter w; that function jitted, then differentiated with respect to x (grad of jit)."""
import jax
import jax.numpy as jnp


def outer(w, x):
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x) * w

    def f_fwd(x):
        return f(x), x

    def f_bwd(x, g):
        return (jnp.cos(x) * w * g,)

    f.defvjp(f_fwd, f_bwd)
    return jnp.sum(f(x))


jax.grad(jax.jit(outer), argnums=1)(2.0, jnp.array([1.0, 2.0, 3.0]))
