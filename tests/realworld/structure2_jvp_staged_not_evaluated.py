"""Forward mode over a custom_vjp that is only staged (make_jaxpr / eval_shape) never raises:
the error comes when the jvp is evaluated or lowered. Tests that inspect the jaxpr do this."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def shifted(x):
    return x + 1.0


def shifted_fwd(x):
    return x + 1.0, ()


def shifted_bwd(_, g):
    return (g,)


shifted.defvjp(shifted_fwd, shifted_bwd)


def jvp_jaxpr(x):
    return jax.make_jaxpr(lambda v: jax.jvp(shifted, (v,), (v,)))(x)


def jvp_shapes(x):
    def pushforward(v):
        return jax.jvp(shifted, (v,), (jnp.ones_like(v),))

    return jax.eval_shape(pushforward, x)
