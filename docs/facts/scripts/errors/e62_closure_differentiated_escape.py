"""E62: a custom_jvp nested in the differentiated function, closing over the differentiated value (escaped tracer)."""
import jax
import jax.numpy as jnp


def outer(w, x):
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x) * w

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), jnp.cos(x) * w * t

    return f(x)


jax.grad(outer)(2.0, 1.0)
